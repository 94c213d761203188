// Events as the client API serves them ("ClientEvent"): event_id, type, content, sender,
// origin_server_ts, room_id, state_key, unsigned. A redacted event is served in the redacted form
// of its room version with unsigned.redacted_because (an erased sender's, pruned, without it); a
// state event carries prev_content and replaces_state; the sending device sees its
// transaction_id. A filter's event_format "federation" asks for the PDU instead (hashes,
// signatures, auth and prev events, depth), with event_id and the same unsigned.

import type { JsonObject } from '../protocol/json.js';
import { type JsonOut, OWN_JSON } from '../protocol/json-text.js';
import { redactEvent } from '../protocol/redaction.js';
import type { StoredEvent } from './stored-event.js';

export interface ClientEvent {
  /** Served unredacted in client format: the stored event its text is cached for (writeClientEvent). */
  [FROM]?: StoredEvent;
  [OWN_JSON]?: (self: ClientEvent, out: JsonOut) => boolean;
  event_id: string;
  type: string;
  content: JsonObject;
  sender: string;
  origin_server_ts: number;
  room_id?: string;
  state_key?: string;
  redacts?: string;
  unsigned: JsonObject;
}

export interface ClientEventOptions {
  /** The time "now" for unsigned.age. */
  readonly now: number;
  /** Who is served: the device that sent the event sees its transaction_id. */
  readonly viewer?: { readonly userId: string; readonly deviceId: string | null };
  /** When the event is redacted: the redaction, already in client format. */
  readonly redactedBecause?: ClientEvent;
  /** Sync leaves room_id out of events inside a room's section (client format only). */
  readonly omitRoomId?: boolean;
  /** "federation": the event as stored (redacted if it is), plus event_id and unsigned. */
  readonly format?: 'client' | 'federation';
  /** Serve the redacted form though no redaction applies (the sender's data was erased). */
  readonly pruned?: boolean;
  /** Aggregations of the events relating to this one (unsigned["m.relations"]). */
  readonly relations?: JsonObject;
}

const FROM: unique symbol = Symbol('from');

/** Unsigned keys a redacted event keeps. */
const REDACTED_UNSIGNED_KEYS = ['replaces_state'];

export function toClientEvent(e: StoredEvent, options: ClientEventOptions): ClientEvent {
  const redacted = e.redactedBy !== undefined || options.pruned === true;
  const pdu = redacted ? redactEvent(e.pdu, e.version) : e.pdu;
  const content = pdu.content;
  const unsigned: JsonObject = {};
  if (e.unsigned !== undefined) {
    for (const [k, v] of Object.entries(e.unsigned)) {
      if (!redacted || REDACTED_UNSIGNED_KEYS.includes(k)) unsigned[k] = v;
    }
  }
  unsigned.age = Math.max(0, options.now - e.originServerTs);
  const viewer = options.viewer;
  if (e.txn !== undefined && viewer !== undefined && viewer.userId === e.sender && viewer.deviceId === e.txn.deviceId) {
    unsigned.transaction_id = e.txn.txnId;
  }
  if (e.redactedBy !== undefined && options.redactedBecause !== undefined) {
    unsigned.redacted_because = options.redactedBecause as unknown as JsonObject;
  }
  if (!redacted && options.relations !== undefined) unsigned['m.relations'] = options.relations;
  if (options.format === 'federation') return { ...pdu, event_id: e.eventId, unsigned } as ClientEvent;
  const out: ClientEvent = {
    event_id: e.eventId,
    type: e.type,
    content,
    sender: e.sender,
    origin_server_ts: e.originServerTs,
    unsigned,
  };
  if (options.omitRoomId !== true) out.room_id = e.roomId;
  if (e.stateKey !== undefined) out.state_key = e.stateKey;
  // Redactions carry `redacts` at the top level in every room version (v11 also in content).
  if (e.type === 'm.room.redaction' && e.redacts !== undefined) out.redacts = e.redacts;
  if (!redacted) {
    out[FROM] = e;
    out[OWN_JSON] = writeClientEvent;
  }
  return out;
}

/**
 * The JSON of every key but `unsigned`, without the closing brace, as UTF-8, per stored event: with
 * room_id and without (sync). Kept while the event is (the event cache holds it). Each has memory
 * of its own, not a slice of a pool another buffer could keep alive.
 */
const heads = new WeakMap<StoredEvent, Buffer>();
const headsWithoutRoom = new WeakMap<StoredEvent, Buffer>();

/**
 * Writes an unredacted client event's JSON: its cached head and its unsigned. False, and so written
 * in full, when the object no longer is what toClientEvent made of its stored event.
 */
function writeClientEvent(ev: ClientEvent, out: JsonOut): boolean {
  const e = ev[FROM];
  if (e === undefined) return false;
  const withRoom = ev.room_id !== undefined;
  const redacts = e.type === 'm.room.redaction' ? e.redacts : undefined;
  const keys = 6 + (withRoom ? 1 : 0) + (e.stateKey !== undefined ? 1 : 0) + (redacts !== undefined ? 1 : 0);
  let n = 0;
  for (const _ in ev) n++;
  if (
    n !== keys ||
    ev.event_id !== e.eventId ||
    ev.type !== e.type ||
    ev.content !== e.pdu.content ||
    ev.sender !== e.sender ||
    ev.origin_server_ts !== e.originServerTs ||
    (withRoom && ev.room_id !== e.roomId) ||
    ev.state_key !== e.stateKey ||
    ev.redacts !== redacts ||
    typeof ev.unsigned !== 'object' ||
    ev.unsigned === null
  ) {
    return false;
  }
  const cache = withRoom ? heads : headsWithoutRoom;
  let head = cache.get(e);
  if (head === undefined) {
    const fixed: Omit<ClientEvent, 'unsigned'> = { event_id: e.eventId, type: e.type, content: e.pdu.content, sender: e.sender, origin_server_ts: e.originServerTs };
    if (withRoom) fixed.room_id = e.roomId;
    if (e.stateKey !== undefined) fixed.state_key = e.stateKey;
    if (redacts !== undefined) fixed.redacts = redacts;
    const text = JSON.stringify(fixed).slice(0, -1);
    head = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    head.write(text);
    cache.set(e, head);
  }
  out.bytes(head);
  out.ascii(',"unsigned":');
  writeUnsigned(ev.unsigned, out);
  out.ascii('}');
  return true;
}

/** JSON.stringify(unsigned), written by hand for the common `{ age }` alone. */
function writeUnsigned(unsigned: JsonObject, out: JsonOut): void {
  for (const key in unsigned) {
    if (key !== 'age') {
      out.text(JSON.stringify(unsigned));
      return;
    }
  }
  const age = unsigned.age;
  if (typeof age === 'number' && Number.isSafeInteger(age)) out.ascii(`{"age":${age}}`);
  else out.text(JSON.stringify(unsigned));
}

/** The stripped form of a state event (invite and knock state). */
export function strippedStateEvent(e: StoredEvent): JsonObject {
  return { type: e.type, state_key: e.stateKey ?? '', content: e.pdu.content, sender: e.sender };
}
