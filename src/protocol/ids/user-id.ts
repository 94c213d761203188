// User IDs (appendix "User Identifiers"): `@localpart:server_name`, at most 255 bytes.
// Three localpart grammars:
//  - strict (spec v1.8+): `[a-z0-9._=\-/+]+`, the only one this server allocates;
//  - historical: printable ASCII without `:` (U+0021–U+007E), what older servers allocated;
//  - non-compliant: any Unicode scalar value but `:` and NUL, even empty. The spec says servers must
//    still accept these in events over federation, so event checks opt into it.

import { type Branded, type ParseOptions, checked, MAX_ID_BYTES, utf8Length } from './common.js';
import { frame, opaqueLocalProblem } from './qualified.js';
import type { ServerName } from './server-name.js';

export type UserId = Branded<'UserId'>;
/** A localpart in the strict grammar, fit for a new local account. */
export type Localpart = Branded<'Localpart'>;

export interface UserIdOptions extends ParseOptions {
  /** Accept the non-compliant localparts the spec tolerates inside events. Default false. */
  readonly allowNonCompliant?: boolean;
}

export interface LocalpartOptions extends ParseOptions {
  /** When given, also check that the full user ID on this server fits in 255 bytes. */
  readonly serverName?: ServerName;
}

const STRICT_LOCALPART = /^[a-z0-9._=\-/+]+$/;
const HISTORICAL_LOCALPART = /^[\x21-\x39\x3B-\x7E]+$/;

function strictLocalProblem(local: string): string | undefined {
  if (local.length === 0) return 'localpart is empty';
  if (!STRICT_LOCALPART.test(local)) return 'localpart may hold only a-z, 0-9, ".", "_", "=", "-", "/" and "+"';
  return undefined;
}

function historicalLocalProblem(local: string): string | undefined {
  if (local.length === 0) return 'localpart is empty';
  if (!HISTORICAL_LOCALPART.test(local)) return 'localpart may hold only printable ASCII other than ":"';
  return undefined;
}

function userIdProblemWith(localProblem: (local: string) => string | undefined) {
  return (s: string): string | undefined => {
    const f = frame(s, '@', 'localpart');
    return f.problem ?? localProblem(f.local);
  };
}

const strictProblem = userIdProblemWith(strictLocalProblem);
const historicalProblem = userIdProblemWith(historicalLocalProblem);
const nonCompliantProblem = userIdProblemWith((local) => opaqueLocalProblem(local, 'localpart'));

function problemFor(opts?: UserIdOptions): (s: string) => string | undefined {
  return opts?.allowNonCompliant === true ? nonCompliantProblem : historicalProblem;
}

/** Any user ID another server may have allocated (historical grammar; non-compliant on request). */
export function parseUserId(input: unknown, opts?: UserIdOptions): UserId {
  return checked('user ID', input, problemFor(opts), opts) as UserId;
}

export function isUserId(input: unknown, opts?: UserIdOptions): input is UserId {
  return typeof input === 'string' && problemFor(opts)(input) === undefined;
}

export function tryParseUserId(input: unknown, opts?: UserIdOptions): UserId | undefined {
  return isUserId(input, opts) ? input : undefined;
}

/** Whether `input` is a user ID of `serverName` (what another server may speak for: its own users). */
export function isUserOf(input: unknown, serverName: string): input is UserId {
  return isUserId(input) && input.slice(input.indexOf(':') + 1) === serverName;
}

/** A user ID in the strict grammar: the form every account this server creates must have. */
export function parseLocalUserId(input: unknown, opts?: ParseOptions): UserId {
  return checked('user ID', input, strictProblem, opts) as UserId;
}

export function isLocalUserId(input: unknown): input is UserId {
  return typeof input === 'string' && strictProblem(input) === undefined;
}

export function tryParseLocalUserId(input: unknown): UserId | undefined {
  return isLocalUserId(input) ? input : undefined;
}

/** Whether the user ID's localpart is in the compliant range (printable ASCII, non-empty). */
export function isCompliantUserId(userId: UserId): boolean {
  return historicalProblem(userId) === undefined;
}

/** Checks a requested username for registration. Throws `M_INVALID_USERNAME` unless told otherwise. */
export function validateLocalpart(input: unknown, opts?: LocalpartOptions): Localpart {
  const errcode = opts?.errcode ?? 'M_INVALID_USERNAME';
  const server = opts?.serverName;
  const problemOf = (s: string): string | undefined => {
    const p = strictLocalProblem(s);
    if (p !== undefined || server === undefined) return p;
    const bytes = utf8Length(`@${s}:${server}`);
    return bytes > MAX_ID_BYTES
      ? `makes a user ID of ${bytes} bytes on ${server}; the limit is ${MAX_ID_BYTES}`
      : undefined;
  };
  return checked('username', input, problemOf, { errcode }) as Localpart;
}

/** The user ID `@localpart:serverName`, checked against the strict grammar and the byte limit. */
export function userIdFrom(localpart: string, serverName: ServerName, opts?: ParseOptions): UserId {
  return parseLocalUserId(`@${localpart}:${serverName}`, opts);
}
