// Authenticating requests between servers (server-server API, "Request Authentication"): the
// origin signs a JSON object of the request's method, URI, origin, destination and JSON body, and
// sends the signature in an `Authorization` header of the `X-Matrix` scheme (`X-Chat` under
// Hearth's own naming; the two are the same thing spelled twice).

import type { JsonObject, JsonValue } from './json.js';
import { signJsonDetached, verifySignatureWithPublicKey, type SigningKey } from './signing.js';

export type ServerAuthScheme = 'X-Chat' | 'X-Matrix';
const SCHEMES: readonly ServerAuthScheme[] = ['X-Chat', 'X-Matrix'];

/** What a request signature covers. */
export interface SignedRequest {
  /** Upper case, as sent. */
  readonly method: string;
  /** The path and query string exactly as sent (`/_matrix/federation/v1/...?...`). */
  readonly uri: string;
  readonly origin: string;
  readonly destination: string;
  /** The request's JSON body; absent for requests without one. */
  readonly content?: JsonValue;
}

/** One parsed `Authorization` header of a server scheme. */
export interface ServerAuthorization {
  readonly scheme: ServerAuthScheme;
  readonly origin: string;
  /** Absent from servers older than spec 1.3: the request is then taken as meant for us. */
  readonly destination: string | undefined;
  readonly key: string;
  readonly sig: string;
}

function requestJson(req: SignedRequest): JsonObject {
  return {
    method: req.method,
    uri: req.uri,
    origin: req.origin,
    destination: req.destination,
    ...(req.content !== undefined ? { content: req.content } : {}),
  };
}

/** Quoted-string of RFC 9110, for parameter values (server names may hold ':' and '[').  */
function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The `Authorization` header value that signs `req` with `key`. */
export function requestAuthorization(scheme: ServerAuthScheme, req: SignedRequest, key: SigningKey): string {
  const sig = signJsonDetached(requestJson(req), key);
  return `${scheme} origin=${quoted(req.origin)},destination=${quoted(req.destination)},key=${quoted(key.keyId)},sig=${quoted(sig)}`;
}

/** Whether `sig` is `publicKey`'s signature of `req`. Never throws. */
export function verifyRequestSignature(req: SignedRequest, sig: string, publicKey: Uint8Array | string): boolean {
  return verifySignatureWithPublicKey(requestJson(req), sig, publicKey);
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/;
// Unquoted values are read more loosely than RFC 9110 tokens: servers send base64 ('/', '=')
// and server names (':') unquoted.
const BARE_VALUE = /^[^\s,"]+/;

/**
 * Parses an `Authorization` header value of a server scheme (RFC 9110 auth-params: names in any
 * case, values tokens or quoted strings, in any order). Undefined when the scheme is another
 * (e.g. `Bearer`); a string saying what is wrong when the header is of a server scheme but
 * malformed or lacks `origin`, `key` or `sig`.
 */
export function parseServerAuthorization(header: string): ServerAuthorization | string | undefined {
  const text = header.trim();
  const space = text.search(/[ \t]/);
  const schemeText = space < 0 ? text : text.slice(0, space);
  const scheme = SCHEMES.find((s) => s.toLowerCase() === schemeText.toLowerCase());
  if (scheme === undefined) return undefined;
  const params = new Map<string, string>();
  let rest = space < 0 ? '' : text.slice(space);
  for (;;) {
    rest = rest.replace(/^[ \t]*,?[ \t]*/, '');
    if (rest === '') break;
    const name = TOKEN.exec(rest)?.[0];
    if (name === undefined) return `malformed ${scheme} header`;
    const equals = /^[ \t]*=[ \t]*/.exec(rest.slice(name.length));
    if (equals === null) return `malformed ${scheme} header: ${name} has no value`;
    rest = rest.slice(name.length + equals[0].length);
    let value: string;
    if (rest.startsWith('"')) {
      let i = 1;
      value = '';
      for (; i < rest.length && rest[i] !== '"'; i++) value += rest[i] === '\\' ? (rest[++i] ?? '') : rest[i];
      if (i >= rest.length) return `malformed ${scheme} header: unterminated quoted value`;
      rest = rest.slice(i + 1);
    } else {
      const token = BARE_VALUE.exec(rest)?.[0];
      if (token === undefined) return `malformed ${scheme} header: ${name} has no value`;
      value = token;
      rest = rest.slice(token.length);
    }
    const key = name.toLowerCase();
    if (params.has(key)) return `malformed ${scheme} header: ${name} given twice`;
    params.set(key, value);
    if (!/^[ \t]*(,|$)/.test(rest)) return `malformed ${scheme} header`;
  }
  const origin = params.get('origin');
  const key = params.get('key');
  const sig = params.get('sig');
  if (origin === undefined || key === undefined || sig === undefined) return `${scheme} header lacks origin, key or sig`;
  return { scheme, origin, destination: params.get('destination'), key, sig };
}
