// Event shapes. A PDU is the full federation form that is signed, hashed and stored; a RoomEvent
// is the view that authorization and state resolution read: event_id known, references as id lists.

import type { JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';

// Size limits (client-server API, "Size limits"; room versions' "Event format").
/** Largest PDU: its canonical JSON in the federation format, signatures included. */
export const MAX_PDU_BYTES = 65_536;
/** Largest `sender`, `room_id`, `type`, `state_key` and `event_id`, in UTF-8 bytes. */
export const MAX_PDU_FIELD_BYTES = 255;
/** Most entries in `prev_events`. */
export const MAX_PREV_EVENTS = 20;
/** Most entries in `auth_events`. */
export const MAX_AUTH_EVENTS = 10;

/** v1–v2 rooms reference events as [event_id, {sha256: reference hash}] pairs. */
export type EventReferencePair = [string, { sha256: string }];
export type EventReferences = string[] | EventReferencePair[];

/** The federation form of a persistent event. */
export interface Pdu {
  /** Present only in v1–v2 rooms; later versions derive it from the reference hash. */
  event_id?: string;
  /** Absent from a v12 create event: the room id is derived from its event id. */
  room_id?: string;
  sender: string;
  type: string;
  state_key?: string;
  content: JsonObject;
  origin_server_ts: number;
  depth: number;
  auth_events: EventReferences;
  prev_events: EventReferences;
  hashes: { sha256: string };
  signatures: Record<string, Record<string, string>>;
  unsigned?: JsonObject;
  /** Top-level in m.room.redaction before v11; v11 moves it into content. */
  redacts?: string;
  /** Legacy top-level fields that redaction before v11 keeps. */
  origin?: string;
  membership?: string;
  prev_state?: unknown;
  [extra: string]: unknown;
}

/** What event authorization and state resolution need of an event. */
export interface RoomEvent {
  readonly event_id: string;
  readonly room_id: string;
  readonly sender: string;
  readonly type: string;
  readonly state_key?: string;
  readonly content: JsonObject;
  readonly origin_server_ts: number;
  readonly depth: number;
  readonly auth_events: readonly string[];
  readonly prev_events: readonly string[];
  /** The redacted event's id, from the top level (v1–v10) or content (v11). */
  readonly redacts?: string;
}

/** The ids of an event-reference list in either format. */
export function referenceIds(refs: EventReferences): string[] {
  return refs.map((r) => (typeof r === 'string' ? r : r[0]));
}

/**
 * The RoomEvent view of a PDU whose id is known (computed for v3+, carried for v1–v2). A
 * redaction names its target at the top level before v11 and in content from v11; the other
 * place is ignored. A v12 create event, which has no `room_id`, is given the one its id makes.
 */
export function toRoomEvent(pdu: Pdu, eventId: string, version: RoomVersion): RoomEvent {
  const where: unknown = version.updatedRedactionRules ? pdu.content.redacts : pdu.redacts;
  const redacts = pdu.type === 'm.room.redaction' && typeof where === 'string' ? where : undefined;
  return {
    event_id: eventId,
    room_id: pdu.room_id ?? pduRoomId(pdu, eventId),
    sender: pdu.sender,
    type: pdu.type,
    ...(pdu.state_key !== undefined ? { state_key: pdu.state_key } : {}),
    content: pdu.content,
    origin_server_ts: pdu.origin_server_ts,
    depth: pdu.depth,
    auth_events: referenceIds(pdu.auth_events),
    prev_events: referenceIds(pdu.prev_events),
    ...(redacts !== undefined ? { redacts } : {}),
  };
}

/**
 * The room a PDU belongs to: its `room_id`, or for a v12 create event (which has none) its own id
 * with `!` for `$`. Empty for any other event without one (never valid).
 */
export function pduRoomId(pdu: { readonly room_id?: unknown; readonly type?: unknown }, eventId: string): string {
  if (typeof pdu.room_id === 'string') return pdu.room_id;
  return pdu.type === 'm.room.create' && eventId.startsWith('$') ? '!' + eventId.slice(1) : '';
}

export function isStateEvent(e: { state_key?: string }): boolean {
  return typeof e.state_key === 'string';
}

/**
 * A (type, state_key) pair as one Map key. The length prefix makes it unambiguous whatever
 * characters the type holds.
 */
export type StateKey = string & { readonly __stateKey: unique symbol };

export function stateKey(type: string, stateKeyValue: string): StateKey {
  return `${type.length}:${type}${stateKeyValue}` as StateKey;
}

export function parseStateKey(key: StateKey): { type: string; stateKey: string } {
  const colon = key.indexOf(':');
  const len = Number(key.slice(0, colon));
  return { type: key.slice(colon + 1, colon + 1 + len), stateKey: key.slice(colon + 1 + len) };
}

/** A room state: (type, state_key) → event id. */
export type StateMap = ReadonlyMap<StateKey, string>;

/** A room state as the authorization rules read it: the event at a (type, state_key), if any. */
export interface StateLookup {
  get(key: StateKey): RoomEvent | undefined;
}
