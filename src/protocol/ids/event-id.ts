// Event IDs in the three formats room versions use (rooms/v1, v3, v4 "Event IDs"):
//  - v1–v2: `$opaque:server_name`, chosen by the sending server;
//  - v3:    `$` + the reference hash in unpadded standard base64 (43 characters);
//  - v4+:   `$` + the reference hash in unpadded URL-safe base64.
// Every form is at most 255 bytes including the sigil.

import { Buffer } from 'node:buffer';
import { HearthError } from '../errors.js';
import type { EventIdFormat } from '../room-versions.js';
import { type Branded, type ParseOptions, checked } from './common.js';
import { frame, opaqueLocalProblem } from './qualified.js';

export type EventId = Branded<'EventId'>;

const HASH_ID_LENGTH = 44;
// 43 characters carry 258 bits; a SHA-256 hash fills 256 of them, so the last character's two
// low bits are zero, which leaves these 16 characters (the same in both alphabets).
const STANDARD_HASH = /^\$[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]$/;
const URL_SAFE_HASH = /^\$[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

function hashProblem(s: string, pattern: RegExp, alphabet: string): string | undefined {
  if (s.length === 0) return 'is empty';
  if (s[0] !== '$') return "must start with '$'";
  if (s.length !== HASH_ID_LENGTH) return `must be '$' and 43 characters of ${alphabet} base64`;
  if (!pattern.test(s)) return `is not a SHA-256 hash in unpadded ${alphabet} base64`;
  return undefined;
}

function v1Problem(s: string): string | undefined {
  const f = frame(s, '$', 'opaque part');
  if (f.problem !== undefined) return f.problem;
  if (f.local.length === 0) return 'opaque part is empty';
  return opaqueLocalProblem(f.local, 'opaque part');
}

const problems: Readonly<Record<EventIdFormat, (s: string) => string | undefined>> = {
  v1: v1Problem,
  v3: (s) => hashProblem(s, STANDARD_HASH, 'standard'),
  v4: (s) => hashProblem(s, URL_SAFE_HASH, 'URL-safe'),
};

function anyFormatProblem(s: string): string | undefined {
  // Base64 has no ':', so a colon decides between the server-named form and the hash forms.
  if (s.includes(':')) return v1Problem(s);
  if (s.length === 0) return 'is empty';
  if (s[0] !== '$') return "must start with '$'";
  if (STANDARD_HASH.test(s) || URL_SAFE_HASH.test(s)) return undefined;
  return "is neither '$opaque:server' nor '$' and a 43-character base64 hash";
}

/** An event ID in any format some room version uses. */
export function parseEventId(input: unknown, opts?: ParseOptions): EventId {
  return checked('event ID', input, anyFormatProblem, opts) as EventId;
}

export function isEventId(input: unknown): input is EventId {
  return typeof input === 'string' && anyFormatProblem(input) === undefined;
}

export function tryParseEventId(input: unknown): EventId | undefined {
  return isEventId(input) ? input : undefined;
}

/** An event ID in the format of one room version (`version.eventIdFormat`). */
export function parseEventIdForFormat(input: unknown, format: EventIdFormat, opts?: ParseOptions): EventId {
  return checked('event ID', input, problems[format], opts) as EventId;
}

export function isEventIdForFormat(input: unknown, format: EventIdFormat): input is EventId {
  return typeof input === 'string' && problems[format](input) === undefined;
}

export function tryParseEventIdForFormat(input: unknown, format: EventIdFormat): EventId | undefined {
  return isEventIdForFormat(input, format) ? input : undefined;
}

/** The v3 or v4+ event ID of an event whose reference hash (SHA-256, 32 bytes) is `hash`. */
export function eventIdFromReferenceHash(hash: Uint8Array, format: 'v3' | 'v4'): EventId {
  if (hash.length !== 32) throw HearthError.unknown(`A reference hash is 32 bytes, got ${hash.length}`);
  const b64 = Buffer.from(hash.buffer, hash.byteOffset, hash.length).toString(format === 'v3' ? 'base64' : 'base64url');
  return `$${b64.replace(/=+$/, '')}` as EventId;
}
