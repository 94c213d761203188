// A stored event as the room server and sync read it: the PDU parsed, the row's bookkeeping
// beside it (stream position, redaction, transaction id, the state snapshots around it).

import type { Pdu, RoomEvent } from '../protocol/events.js';
import { toRoomEvent } from '../protocol/events.js';
import type { JsonObject } from '../protocol/json.js';
import { redactEvent } from '../protocol/redaction.js';
import { getRoomVersion, type RoomVersion } from '../protocol/room-versions.js';
import { HearthError } from '../protocol/errors.js';
import type { EventRow } from '../storage/rooms/events.js';
import type { PersistEvent } from './persist-event.js';
import type { EventStatus } from '../storage/schema.js';

export type { EventStatus };

export interface StoredEvent {
  readonly nid: number;
  readonly eventId: string;
  readonly roomNid: number;
  readonly roomId: string;
  readonly version: RoomVersion;
  readonly pdu: Pdu;
  readonly type: string;
  /** Undefined for non-state events. */
  readonly stateKey: string | undefined;
  readonly sender: string;
  readonly originServerTs: number;
  /** Position on the events stream; undefined off the timeline (status other than 'timeline'). */
  readonly streamOrdering: number | undefined;
  /** Server-side unsigned data: prev_content, prev_sender, replaces_state, invite_room_state. */
  readonly unsigned: JsonObject | undefined;
  /** For redactions: the event redacted. */
  readonly redacts: string | undefined;
  /** The id of the redaction that applies to this event. */
  readonly redactedBy: string | undefined;
  readonly status: EventStatus;
  /** The device and transaction id a client sent the event with. */
  readonly txn: { readonly deviceId: string; readonly txnId: string } | undefined;
  readonly stateBeforeNid: number | undefined;
  readonly stateAfterNid: number | undefined;
  /**
   * True when the event is known to have been decided against the room's current state as it then
   * stood (PersistEvent.onCurrentState); not kept in the database, so unknown for events read there.
   */
  readonly onCurrentState?: true;
  /** A stored timeline event relates to this one (aggregations are read for it when served). */
  readonly hasRelations?: true;
  /** Estimated bytes the parsed event holds in memory (for the event cache's bound). */
  readonly size: number;
}

/**
 * Memory of a parsed event, from the length of its JSON: parsing a typical message of 600
 * characters measured some 960 bytes of heap, and its row's strings come on top.
 */
function estimatedSize(jsonChars: number): number {
  return 2 * jsonChars + 512;
}

export function storedEventFromRow(row: EventRow): StoredEvent {
  const version = getRoomVersion(row.room_version);
  if (version === undefined) throw new Error(`room ${row.room_id} has unknown version ${row.room_version}`);
  return {
    nid: Number(row.event_nid),
    eventId: row.event_id,
    roomNid: Number(row.room_nid),
    roomId: row.room_id,
    version,
    pdu: JSON.parse(row.json) as Pdu,
    type: row.type,
    stateKey: row.state_key ?? undefined,
    sender: row.sender,
    originServerTs: Number(row.origin_server_ts),
    streamOrdering: row.stream_ordering === null ? undefined : Number(row.stream_ordering),
    unsigned: row.unsigned_json === null ? undefined : (JSON.parse(row.unsigned_json) as JsonObject),
    redacts: row.redacts ?? undefined,
    redactedBy: row.redacted_by ?? undefined,
    status: row.status,
    txn: row.txn_device_id !== null && row.txn_id !== null ? { deviceId: row.txn_device_id, txnId: row.txn_id } : undefined,
    stateBeforeNid: row.state_before_nid === null ? undefined : Number(row.state_before_nid),
    stateAfterNid: row.state_after_nid === null ? undefined : Number(row.state_after_nid),
    ...(row.has_relations !== null && Number(row.has_relations) === 1 ? { hasRelations: true as const } : {}),
    size: estimatedSize(row.json.length + (row.unsigned_json?.length ?? 0)),
  };
}

/**
 * A committed event as a read of its row would give it, without the read: the row's JSON is
 * JSON.stringify of this very PDU, and its unsigned data this object's.
 */
export function storedEventOf(e: PersistEvent): StoredEvent {
  const pdu = e.pdu;
  return {
    nid: e.ref.nid!,
    eventId: e.ref.eventId,
    roomNid: e.head.roomNid!,
    roomId: e.head.roomId,
    version: e.head.version,
    pdu,
    type: pdu.type,
    stateKey: pdu.state_key,
    sender: pdu.sender,
    originServerTs: pdu.origin_server_ts,
    streamOrdering: e.streamOrdering,
    unsigned: e.unsigned,
    redacts: e.event.redacts,
    redactedBy: e.redactedBy,
    status: e.status,
    txn: e.txn,
    stateBeforeNid: e.snapshotBefore?.info?.nid,
    stateAfterNid: e.snapshotAfter?.info?.nid,
    ...(e.onCurrentState === true ? { onCurrentState: true as const } : {}),
    ...(e.hasRelations === true ? { hasRelations: true as const } : {}),
    size: estimatedSize(e.json.length + (e.unsigned === undefined ? 0 : JSON.stringify(e.unsigned).length)),
  };
}

/**
 * The stream position of an event known to be on the timeline: one read by position, or one
 * checked with `isServed`. An event without one here is a bug, not a client's error.
 */
export function positionOf(e: Pick<StoredEvent, 'eventId' | 'streamOrdering'>): number {
  if (e.streamOrdering === undefined) throw HearthError.unknown(`event ${e.eventId} has no stream position`);
  return e.streamOrdering;
}

/** Whether clients may be served this event: only timeline events are (never rejected or soft-failed ones). */
export function isServed(e: Pick<StoredEvent, 'status'>): boolean {
  return e.status === 'timeline';
}

/**
 * Orders events by stream position. Events off the timeline (outliers of the current state, such
 * as state received with a join) come first, by nid: they precede what the room's timeline holds.
 */
export function byStreamOrder(a: Pick<StoredEvent, 'nid' | 'streamOrdering'>, b: Pick<StoredEvent, 'nid' | 'streamOrdering'>): number {
  const pa = a.streamOrdering ?? -Infinity;
  const pb = b.streamOrdering ?? -Infinity;
  return pa !== pb ? pa - pb : a.nid - b.nid;
}

/** The RoomEvent view authorization reads. */
export function roomEventOf(e: StoredEvent): RoomEvent {
  return toRoomEvent(e.pdu, e.eventId, e.version);
}

/**
 * The RoomEvent view authorization and state resolution read: a redacted event in its redacted
 * form, as every server that applied the redaction sees it.
 */
export function authRoomEventOf(e: StoredEvent): RoomEvent {
  const ev = roomEventOf(e);
  return e.redactedBy === undefined ? ev : { ...ev, content: redactEvent(ev, e.version).content };
}

/** The membership a member event sets ('leave' for anything unusable). */
export function membershipOf(e: { type: string; pdu: Pdu }): string | undefined {
  if (e.type !== 'm.room.member') return undefined;
  const m = e.pdu.content.membership;
  return typeof m === 'string' ? m : undefined;
}
