// Outbound federation requests: resolve the destination, send over a keep-alive TLS pool of its
// own (so a slow or dead server only ever holds up its own requests), sign with the injected
// authorizer, and read the JSON answer. Speaks the configured naming (`/_chat`, X-Chat) and falls
// back to the other one for servers that only know it, remembering what worked per destination.

import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import type { Pool } from 'undici';
import { loadUndici } from './undici.js';
import type { JsonValue } from '../protocol/json.js';
import {
  type DnsResolver,
  FederationError,
  type Naming,
  type ResolvedServer,
  ServerResolver,
  errorText,
  readLimited,
  trustedCas,
} from './resolve.js';

export { FederationError, type FederationFailure, type Naming, ServerResolver } from './resolve.js';

export type AuthScheme = 'X-Chat' | 'X-Matrix';

export interface AuthorizeInput {
  readonly scheme: AuthScheme;
  readonly method: string;
  /** Path with its API root and query, exactly as sent. */
  readonly uri: string;
  readonly destination: string;
  /** The JSON body, or undefined when there is none. */
  readonly content: JsonValue | undefined;
}

/** Makes the value of the Authorization header. */
export type Authorize = (input: AuthorizeInput) => string | Promise<string>;

export type QueryValue = string | number | boolean;

export interface FederationRequest {
  readonly destination: string;
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** Percent-encoded path without the API root: `/federation/v1/version`, `/key/v2/server`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue | readonly QueryValue[] | undefined>>;
  readonly body?: JsonValue;
  readonly timeoutMs?: number;
}

export interface FederationResponse {
  readonly status: number;
  readonly body: JsonValue;
}

export interface FederationClientOptions {
  readonly authorize: Authorize;
  /** `global.protocol_name`: the naming tried first. */
  readonly protocolName?: Naming;
  /** `federation_api.disable_tls_validation`. */
  readonly disableTlsValidation?: boolean;
  /** PEM certificates trusted in addition to the system's roots. */
  readonly ca?: string | readonly string[];
  readonly dns?: DnsResolver;
  /** Port of well-known fetches (443; tests use others). */
  readonly wellKnownPort?: number;
  /** Shared resolver; by default the client makes its own from the options above. */
  readonly resolver?: ServerResolver;
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  readonly connectionsPerDestination?: number;
  readonly userAgent?: string;
  readonly now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_RESPONSE_BYTES = 100 * 1024 * 1024;
const MAX_POOLS = 1000;
// Long enough to outlive a naming change that an operator makes on purpose, short enough to notice it.
const NAMING_MEMORY_MS = 24 * 3600_000;
const MAX_REMEMBERED_NAMINGS = 50_000;

const ROOT: Record<Naming, string> = { chat: '/_chat', matrix: '/_matrix' };
const SCHEME: Record<Naming, AuthScheme> = { chat: 'X-Chat', matrix: 'X-Matrix' };
const other = (naming: Naming): Naming => (naming === 'chat' ? 'matrix' : 'chat');

const TLS_CODES = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_|HOSTNAME|ALTNAME|EPROTO/;
const RESOLUTION_CODES = new Set(['ENOTFOUND', 'ENODATA', 'ESERVFAIL', 'EREFUSED', 'ETIMEOUT']);

function encodeQuery(query: FederationRequest['query']): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(item))}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** A raw answer, before deciding whether it is one the caller gets. */
interface Answer {
  readonly status: number;
  readonly text: string;
  readonly json: JsonValue | undefined;
  /** For a streamed request's 2xx answer: its headers and its body, unread. */
  readonly stream?: { readonly headers: Readonly<Record<string, string | string[] | undefined>>; readonly body: Readable };
}

/** A streamed request's answer: a 2xx with its body unread, or any other with its JSON. */
export interface FederationStreamResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body of a 2xx answer, to be read (or destroyed) by the caller. */
  readonly body?: Readable;
  readonly json?: JsonValue;
}

/** The destination does not know this API root: 404 M_UNRECOGNIZED, or a 404/405 that is not JSON. */
function unrecognized(a: Answer): boolean {
  if (a.status !== 404 && a.status !== 405) return false;
  if (a.json === undefined) return true;
  return a.status === 404 && typeof a.json === 'object' && a.json !== null && !Array.isArray(a.json) && a.json.errcode === 'M_UNRECOGNIZED';
}

export class FederationClient {
  private readonly resolver: ServerResolver;
  private readonly ownsResolver: boolean;
  private readonly preferred: Naming;
  private readonly pools = new Map<string, Pool>();
  private readonly namings = new Map<string, { naming: Naming; until: number }>();
  private readonly ca: string[] | undefined;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly options: FederationClientOptions) {
    this.preferred = options.protocolName ?? 'chat';
    this.now = options.now ?? Date.now;
    this.ownsResolver = options.resolver === undefined;
    this.resolver =
      options.resolver ??
      new ServerResolver({
        ...(options.dns ? { dns: options.dns } : {}),
        ...(options.ca !== undefined ? { ca: options.ca } : {}),
        disableTlsValidation: options.disableTlsValidation === true,
        ...(options.wellKnownPort !== undefined ? { wellKnownPort: options.wellKnownPort } : {}),
        now: this.now,
      });
    this.ca = trustedCas(options.ca);
  }

  /**
   * Sends one request and returns any JSON answer, whatever its status. Throws FederationError when
   * there is no usable answer: resolution, connection, TLS, time limit, or a body that is not JSON.
   */
  async request(req: FederationRequest): Promise<FederationResponse> {
    if (this.closed) throw new FederationError(req.destination, 'connect', 'the federation client is closed');
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const deadline = { signal: controller.signal, timeoutMs };
    try {
      const answer = await this.withNaming(req, deadline);
      if (answer.json === undefined) {
        throw new FederationError(req.destination, answer.status >= 300 ? 'status' : 'response', `answered ${answer.status} with a body that is not JSON`);
      }
      return { status: answer.status, body: answer.json };
    } catch (err) {
      // Only the deadline's own rejections arrive here unclassified.
      if (controller.signal.aborted && !(err instanceof FederationError)) {
        throw new FederationError(req.destination, 'timeout', `no answer within ${timeoutMs} ms`, err);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sends one request and hands over a 2xx answer's body unread (media): the time limit covers
   * the body too, so the caller reads it within `timeoutMs`. Other answers come with their JSON.
   */
  async requestStream(req: FederationRequest): Promise<FederationStreamResponse> {
    if (this.closed) throw new FederationError(req.destination, 'connect', 'the federation client is closed');
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const deadline = { signal: controller.signal, timeoutMs };
    try {
      const answer = await this.withNaming(req, deadline, true);
      if (answer.stream === undefined) {
        clearTimeout(timer);
        return { status: answer.status, headers: {}, ...(answer.json !== undefined ? { json: answer.json } : {}) };
      }
      answer.stream.body.once('close', () => clearTimeout(timer));
      return { status: answer.status, headers: answer.stream.headers, body: answer.stream.body };
    } catch (err) {
      clearTimeout(timer);
      if (controller.signal.aborted && !(err instanceof FederationError)) {
        throw new FederationError(req.destination, 'timeout', `no answer within ${timeoutMs} ms`, err);
      }
      throw err;
    }
  }

  /** Closes every connection pool; requests under way finish first. */
  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    // Requests in flight are abandoned, not waited for: a dead peer must not hold up a shutdown
    // (the sender resends an unacknowledged transaction after the restart).
    await Promise.all(pools.map((p) => p.destroy()));
    if (this.ownsResolver) await this.resolver.close();
  }

  private knownNaming(destination: string): Naming | undefined {
    const known = this.namings.get(destination);
    return known && known.until > this.now() ? known.naming : undefined;
  }

  private rememberNaming(destination: string, naming: Naming): void {
    this.namings.delete(destination);
    this.namings.set(destination, { naming, until: this.now() + NAMING_MEMORY_MS });
    if (this.namings.size > MAX_REMEMBERED_NAMINGS) this.namings.delete(this.namings.keys().next().value as string);
  }

  private async withNaming(req: FederationRequest, deadline: Deadline, stream = false): Promise<Answer> {
    const known = this.knownNaming(req.destination);
    const first = known ?? this.preferred;
    const target = await race(this.resolver.resolve(req.destination, first), deadline);
    if (known !== undefined) return this.send(req, first, target, deadline, stream);

    const discovered = (r: ResolvedServer) => r.via === 'well-known' || r.via === 'srv';
    if (discovered(target)) {
      this.rememberNaming(req.destination, first);
      return this.send(req, first, target, deadline, stream);
    }
    // Nothing published under the first naming: records under the other one settle it before
    // anything is sent (a server delegating only by /.well-known/matrix/server is a Matrix server).
    const second = other(first);
    let secondTarget: ResolvedServer | undefined;
    if (target.via === 'default-port') {
      secondTarget = await race(this.resolver.resolve(req.destination, second), deadline).catch(() => undefined);
      if (secondTarget && discovered(secondTarget)) {
        this.rememberNaming(req.destination, second);
        return this.send(req, second, secondTarget, deadline, stream);
      }
    }
    const answer = await this.send(req, first, target, deadline, stream);
    if (!unrecognized(answer)) {
      this.rememberNaming(req.destination, first);
      return answer;
    }
    // The path is unknown under this root: try the other root once.
    secondTarget ??= await race(this.resolver.resolve(req.destination, second), deadline);
    const retry = await this.send(req, second, secondTarget, deadline, stream);
    if (unrecognized(retry)) return answer;
    this.rememberNaming(req.destination, second);
    return retry;
  }

  private async send(req: FederationRequest, naming: Naming, target: ResolvedServer, deadline: Deadline, stream = false): Promise<Answer> {
    const uri = `${ROOT[naming]}${req.path}${encodeQuery(req.query)}`;
    const authorization = await this.options.authorize({
      scheme: SCHEME[naming],
      method: req.method,
      uri,
      destination: req.destination,
      content: req.body,
    });
    const headers: Record<string, string> = {
      host: target.hostHeader,
      authorization,
      accept: 'application/json',
      'user-agent': this.options.userAgent ?? 'Hearth',
    };
    let payload: string | undefined;
    if (req.body !== undefined) {
      payload = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const limit = this.options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
    const where = `${target.host}:${target.port}`;
    try {
      const pending = (await this.pool(target)).request({
        path: uri,
        method: req.method,
        headers,
        body: payload ?? null,
        // The deadline's signal bounds connecting, headers and body together.
        signal: deadline.signal,
      });
      // Undici acts on the signal only once the request has a connection: one still connecting (a
      // peer that accepts and never completes TLS) would wait out the connect timeout instead. It
      // is given up here at the deadline, and whatever it answers later is dropped.
      const res = await race(pending, deadline).catch((err: unknown) => {
        if (deadline.signal.aborted) pending.then((late) => late.body.destroy(), () => undefined);
        throw err;
      });
      if (stream && res.statusCode >= 200 && res.statusCode < 300) {
        return { status: res.statusCode, text: '', json: undefined, stream: { headers: res.headers, body: res.body } };
      }
      const length = Number(res.headers['content-length']);
      const text = length > limit ? undefined : await readLimited(res.body, limit);
      if (text === undefined) {
        res.body.destroy();
        throw new FederationError(req.destination, 'response', `answered ${res.statusCode} with a body over ${limit} bytes`);
      }
      let json: JsonValue | undefined;
      try {
        json = JSON.parse(text) as JsonValue;
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, text, json };
    } catch (err) {
      if (err instanceof FederationError) throw err;
      if (deadline.signal.aborted) throw new FederationError(req.destination, 'timeout', `no answer from ${where} within ${deadline.timeoutMs} ms`, err);
      throw classify(req.destination, where, err);
    }
  }

  private async pool(target: ResolvedServer): Promise<Pool> {
    const key = `${target.host} ${target.port} ${target.tlsServerName}`;
    let pool = this.pools.get(key);
    if (pool) {
      // Most recently used last, so the bound below closes the idlest.
      this.pools.delete(key);
      this.pools.set(key, pool);
      return pool;
    }
    const { Pool } = await loadUndici();
    // Made while undici loaded: another request may have made it meanwhile.
    const made = this.pools.get(key);
    if (made) return made;
    const host = isIP(target.host) === 6 ? `[${target.host}]` : target.host;
    pool = new Pool(`https://${host}:${target.port}`, {
      connections: this.options.connectionsPerDestination ?? 8,
      keepAliveTimeout: 30_000,
      connect: {
        lookup: this.resolver.lookup,
        rejectUnauthorized: !this.options.disableTlsValidation,
        // SNI is for DNS names only; for an IP the certificate is checked against the address.
        ...(isIP(target.tlsServerName) === 0 ? { servername: target.tlsServerName } : {}),
        ...(this.ca ? { ca: this.ca } : {}),
      },
    });
    this.pools.set(key, pool);
    if (this.pools.size > MAX_POOLS) {
      const [oldKey, oldest] = this.pools.entries().next().value as [string, Pool];
      this.pools.delete(oldKey);
      void oldest.close();
    }
    return pool;
  }
}

interface Deadline {
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

/** `promise`, unless the deadline passes first (the promise itself may go on, e.g. a shared lookup). */
function race<T>(promise: Promise<T>, deadline: Deadline): Promise<T> {
  if (deadline.signal.aborted) return Promise.reject(new Error('deadline passed'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('deadline passed'));
    deadline.signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        deadline.signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        deadline.signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function classify(destination: string, where: string, err: unknown): FederationError {
  const code = String((err as { code?: unknown }).code ?? '');
  const detail = errorText(err);
  if (code.startsWith('UND_ERR_CONNECT_TIMEOUT') || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new FederationError(destination, 'timeout', `timed out at ${where}: ${detail}`, err);
  }
  if (RESOLUTION_CODES.has(code)) return new FederationError(destination, 'resolution', `cannot resolve ${where}: ${detail}`, err);
  if (TLS_CODES.test(code)) return new FederationError(destination, 'tls', `TLS with ${where} failed: ${detail}`, err);
  return new FederationError(destination, 'connect', `request to ${where} failed: ${detail}`, err);
}
