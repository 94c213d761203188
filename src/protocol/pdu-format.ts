// Check 1 on a received PDU (server-server API, "Checks performed on receipt of a PDU"): the event
// must comply with the event format of its room version (rooms/v1, v3, v4, v6 and v11 "Event
// format") and with the size limits (client-server API, "Size limits"), otherwise it is dropped.
// Only the shape is checked here; signatures, hashes and the auth rules come after.
//
// Per version: v1–v2 carry `event_id` (`$opaque:server`) and reference events as
// [event_id, {sha256}] pairs; v3 references plain ids in standard base64, v4+ in URL-safe base64
// (an `event_id` the sender added is ignored: the id is the reference hash); v6+ events must be
// strict canonical JSON; a redaction names its target at the top level before v11, in content from
// v11; v8+ joins may name `join_authorised_via_users_server`, whose server must sign them.

import { canonicalJson } from './canonical-json.js';
import {
  MAX_AUTH_EVENTS,
  MAX_PDU_BYTES,
  MAX_PDU_FIELD_BYTES,
  MAX_PREV_EVENTS,
  type Pdu,
} from './events.js';
import { parseEventIdForFormat } from './ids/event-id.js';
import { isHashedRoomId, parseRoomId } from './ids/room-ids.js';
import { parseUserId } from './ids/user-id.js';
import { isJsonObject, type JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';

export type PduFormatCheck = { ok: true; pdu: Pdu } | { ok: false; reason: string };

export interface PduFormatOptions {
  /** The room the PDU must belong to, when the caller knows it. */
  readonly roomId?: string;
  /**
   * The server a membership handshake (send_join, send_leave, send_knock, invite) came from: the
   * sender must be one of its users. Left out for /send, where PDUs may be relayed by any server.
   */
  readonly origin?: string;
}

/** Largest 64-bit integer, as a double (2^63: JSON.parse cannot tell 2^63 − 1 from it). */
const INT64_LIMIT = 2 ** 63;

/** `unsigned` is not signed: only what the receiver has a use for is kept (as Synapse does). */
const UNSIGNED_KEPT: readonly string[] = ['age'];
const MEMBER_UNSIGNED_KEPT: readonly string[] = ['age', 'invite_room_state', 'knock_room_state'];

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The parser's complaint about `value`, or undefined when it parses. */
function parseProblem(parse: () => unknown): string | undefined {
  try {
    parse();
    return undefined;
  } catch (e) {
    return messageOf(e);
  }
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function stringProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `expected a string, got ${kindOf(value)}`;
  const bytes = byteLength(value);
  if (bytes > MAX_PDU_FIELD_BYTES) return `is ${bytes} bytes long; the limit is ${MAX_PDU_FIELD_BYTES}`;
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function integerProblem(value: unknown, version: RoomVersion, min?: number): string | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value)) return `expected an integer, got ${kindOf(value)}`;
  // v6+ (strict canonical JSON): ±(2^53 − 1); before, the spec's int64.
  if (version.strictCanonicalJson && !Number.isSafeInteger(value)) return 'is outside the canonical JSON integer range';
  if (value > INT64_LIMIT || value < -INT64_LIMIT) return 'is outside the 64-bit integer range';
  if (min !== undefined && value < min) return `must be at least ${min}`;
  return undefined;
}

function referencesProblem(value: unknown, max: number, version: RoomVersion): string | undefined {
  if (!Array.isArray(value)) return `expected an array, got ${kindOf(value)}`;
  if (value.length > max) return `has ${value.length} entries; at most ${max} are allowed`;
  const format = version.eventIdFormat;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (format === 'v1') {
      // v1–v2: [event_id, {sha256: reference hash}].
      if (!Array.isArray(item) || item.length !== 2) return `entry ${i} is not an [event_id, {sha256}] pair`;
      const idProblem = parseProblem(() => parseEventIdForFormat(item[0], format));
      if (idProblem !== undefined) return `entry ${i}: ${idProblem}`;
      const hash: unknown = item[1];
      if (!isJsonObject(hash) || typeof hash.sha256 !== 'string') return `entry ${i} has no {sha256} reference hash`;
    } else {
      const idProblem = parseProblem(() => parseEventIdForFormat(item, format));
      if (idProblem !== undefined) return `entry ${i}: ${idProblem}`;
    }
  }
  return undefined;
}

function signaturesProblem(value: unknown): string | undefined {
  if (!isJsonObject(value)) return `expected an object, got ${kindOf(value)}`;
  for (const server of Object.keys(value)) {
    const byKey = value[server];
    if (!isJsonObject(byKey)) return `${server}: expected an object of key id to signature`;
    for (const keyId of Object.keys(byKey)) {
      if (typeof byKey[keyId] !== 'string') return `${server} ${keyId}: expected a string`;
    }
  }
  return undefined;
}

/** The first field that breaks the event format, as `field: problem`; undefined when none does. */
function fieldProblem(e: JsonObject, version: RoomVersion, options: PduFormatOptions): string | undefined {
  let p: string | undefined;
  // room_id, sender, type, state_key: strings of at most 255 bytes; the ids well-formed.
  // v12: a create event has no room_id (its id names the room: the caller compares that one);
  // every other event's is of the hashed form.
  const v12Create = version.createEventRoomId && e.type === 'm.room.create' && !Object.hasOwn(e, 'room_id');
  if (!v12Create) {
    if ((p = stringProblem(e.room_id) ?? parseProblem(() => parseRoomId(e.room_id))) !== undefined) return `room_id: ${p}`;
    if (version.createEventRoomId && !isHashedRoomId(e.room_id as string)) return 'room_id: not the create event\'s id, as this room version requires';
    if (options.roomId !== undefined && e.room_id !== options.roomId) return `room_id: the event is for ${e.room_id as string}, not ${options.roomId}`;
  }
  // Servers must accept non-compliant user ids inside events (appendix "User Identifiers").
  if ((p = stringProblem(e.sender) ?? parseProblem(() => parseUserId(e.sender, { allowNonCompliant: true }))) !== undefined) {
    return `sender: ${p}`;
  }
  if (options.origin !== undefined && (e.sender as string).slice((e.sender as string).indexOf(':') + 1) !== options.origin) {
    return `sender: ${e.sender as string} is not a user of ${options.origin}`;
  }
  if ((p = stringProblem(e.type)) !== undefined) return `type: ${p}`;
  if (Object.hasOwn(e, 'state_key') && (p = stringProblem(e.state_key)) !== undefined) return `state_key: ${p}`;
  if (!isJsonObject(e.content)) return `content: expected an object, got ${kindOf(e.content)}`;
  if ((p = integerProblem(e.origin_server_ts, version)) !== undefined) return `origin_server_ts: ${p}`;
  if ((p = integerProblem(e.depth, version, 0)) !== undefined) return `depth: ${p}`;
  if ((p = referencesProblem(e.prev_events, MAX_PREV_EVENTS, version)) !== undefined) return `prev_events: ${p}`;
  if ((p = referencesProblem(e.auth_events, MAX_AUTH_EVENTS, version)) !== undefined) return `auth_events: ${p}`;
  if (!isJsonObject(e.hashes)) return `hashes: expected an object, got ${kindOf(e.hashes)}`;
  if (typeof e.hashes.sha256 !== 'string') return `hashes: sha256 is not a string`;
  if ((p = signaturesProblem(e.signatures)) !== undefined) return `signatures: ${p}`;
  // v1–v2: the origin's event id, `$opaque:server`; later versions derive the id instead.
  if (version.eventIdFormat === 'v1') {
    if (!Object.hasOwn(e, 'event_id')) return 'event_id: missing (required in this room version)';
    if ((p = parseProblem(() => parseEventIdForFormat(e.event_id, 'v1'))) !== undefined) return `event_id: ${p}`;
  }
  if (e.type === 'm.room.redaction') {
    // Optional: a redacted redaction has lost its top-level `redacts` (before v11).
    const [field, target] = version.updatedRedactionRules ? ['content.redacts', e.content.redacts] : ['redacts', e.redacts];
    if (target !== undefined && (p = parseProblem(() => parseEventIdForFormat(target, version.eventIdFormat))) !== undefined) {
      return `${field}: ${p}`;
    }
  }
  if (version.restrictedJoinRule && e.type === 'm.room.member' && e.content.membership === 'join') {
    const via = e.content.join_authorised_via_users_server;
    // Its server must sign the event (checked next), so it must name one.
    if (via !== undefined && (p = parseProblem(() => parseUserId(via, { allowNonCompliant: true }))) !== undefined) {
      return `content.join_authorised_via_users_server: ${p}`;
    }
  }
  return undefined;
}

/** `unsigned` reduced to the keys kept, or undefined when none is left. */
function keptUnsigned(e: JsonObject): JsonObject | undefined {
  const unsigned = e.unsigned;
  if (!isJsonObject(unsigned)) return undefined;
  const out: JsonObject = {};
  let any = false;
  for (const key of e.type === 'm.room.member' ? MEMBER_UNSIGNED_KEPT : UNSIGNED_KEPT) {
    if (Object.hasOwn(unsigned, key)) {
      out[key] = unsigned[key]!;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Whether `json` is a valid PDU of `version`: every field of the event format with its type and
 * limits, and at most MAX_PDU_BYTES as canonical JSON. On success `pdu` is a shallow copy of it
 * whose `unsigned` keeps only `age` (and for m.room.member the invite or knock room state). The
 * input is not changed. Never throws.
 */
export function checkPduFormat(json: unknown, version: RoomVersion, options: PduFormatOptions = {}): PduFormatCheck {
  if (!isJsonObject(json)) return { ok: false, reason: `event: expected a JSON object, got ${kindOf(json)}` };
  let problem: string | undefined;
  try {
    problem = fieldProblem(json, version, options);
  } catch (e) {
    // Only reachable with values JSON.parse does not produce (getters that throw and the like).
    problem = `event: ${messageOf(e)}`;
  }
  if (problem !== undefined) return { ok: false, reason: problem };

  const pdu: { [key: string]: unknown } = { ...json };
  const unsigned = keptUnsigned(json);
  if (unsigned === undefined) delete pdu.unsigned;
  else pdu.unsigned = unsigned;

  // The whole event, signatures included, as canonical JSON; v6+ also requires it to be strict.
  let text: string;
  try {
    text = canonicalJson(pdu, { strict: version.strictCanonicalJson });
  } catch (e) {
    return { ok: false, reason: `event: no canonical JSON form in room version ${version.id}: ${messageOf(e)}` };
  }
  // A character takes at most 3 bytes per UTF-16 unit, so short texts skip the count.
  if (text.length * 3 > MAX_PDU_BYTES) {
    const bytes = byteLength(text);
    if (bytes > MAX_PDU_BYTES) return { ok: false, reason: `event: ${bytes} bytes as canonical JSON; the limit is ${MAX_PDU_BYTES}` };
  }
  return { ok: true, pdu: pdu as Pdu };
}
