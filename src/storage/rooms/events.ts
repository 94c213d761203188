// Event rows: the reads the room server and sync need, by id and by position on the events
// stream. (Writing them is in hot-queries.ts: every send runs those statements.)
// Reads by position serve timeline events only: events off the timeline (outliers, rejected and
// soft-failed events) have no position, so `stream_ordering is not null` is "on the timeline".

import type { Insertable, Kysely, Selectable } from 'kysely';
import type { EventsTable, Schema } from '../schema.js';

/** An event row with its room's id and version. */
export type EventRow = Selectable<EventsTable> & { room_id: string; room_version: string };

export type NewEventRow = Omit<Insertable<EventsTable>, 'event_nid' | 'has_relations'>;

export function selectEvents(db: Kysely<Schema>) {
  return db.selectFrom('events as e').innerJoin('rooms as r', 'r.room_nid', 'e.room_nid').selectAll('e').select(['r.room_id', 'r.room_version']);
}

export async function eventsByIds(db: Kysely<Schema>, eventIds: readonly string[]): Promise<EventRow[]> {
  if (eventIds.length === 0) return [];
  if (eventIds.length <= 5000) return selectEvents(db).where('e.event_id', 'in', eventIds).execute();
  // A joined room's whole state is read at once: bounded IN lists, as below.
  const out: EventRow[] = [];
  for (let i = 0; i < eventIds.length; i += 5000) {
    out.push(...(await selectEvents(db).where('e.event_id', 'in', eventIds.slice(i, i + 5000)).execute()));
  }
  return out;
}

export async function eventsByNids(db: Kysely<Schema>, nids: readonly number[]): Promise<EventRow[]> {
  if (nids.length === 0) return [];
  const out: EventRow[] = [];
  // Bounded IN lists: SQLite and PostgreSQL both cap bound parameters.
  for (let i = 0; i < nids.length; i += 5000) {
    out.push(...(await selectEvents(db).where('e.event_nid', 'in', nids.slice(i, i + 5000)).execute()));
  }
  return out;
}

/** An event as later events cite it: id and depth. */
export interface EventRefRow {
  readonly event_nid: number;
  readonly event_id: string;
  readonly depth: number;
}

/** Events by nid, only what citing them takes: for a big room's state, held by reference. */
export async function eventRefsByNids(db: Kysely<Schema>, nids: readonly number[]): Promise<EventRefRow[]> {
  const out: EventRefRow[] = [];
  for (let i = 0; i < nids.length; i += 5000) {
    const rows = await db.selectFrom('events').select(['event_nid', 'event_id', 'depth']).where('event_nid', 'in', nids.slice(i, i + 5000)).execute();
    for (const r of rows) out.push({ event_nid: Number(r.event_nid), event_id: r.event_id, depth: Number(r.depth) });
  }
  return out;
}

/** What building on an event needs of its row: its id, PDU and redaction. */
export type EventPduRow = Pick<EventsTable, 'event_id' | 'json' | 'redacted_by'> & { event_nid: number };

/**
 * Events by nid, only the columns of EventPduRow: for reads of many (a room's whole state), where
 * the other columns would cost as much as these.
 */
export async function eventPdusByNids(db: Kysely<Schema>, nids: readonly number[]): Promise<EventPduRow[]> {
  if (nids.length === 0) return [];
  const out: EventPduRow[] = [];
  for (let i = 0; i < nids.length; i += 5000) {
    const rows = await db
      .selectFrom('events')
      .select(['event_nid', 'event_id', 'json', 'redacted_by'])
      .where('event_nid', 'in', nids.slice(i, i + 5000))
      .execute();
    for (const r of rows) out.push({ ...r, event_nid: Number(r.event_nid) });
  }
  return out;
}

export interface StreamRange {
  /** Exclusive lower bound on stream_ordering. */
  readonly after?: number;
  /** Inclusive upper bound on stream_ordering. */
  readonly upTo?: number;
}

/**
 * A room's events with stream_ordering in (after, upTo], newest first ('desc') or oldest first
 * ('asc'), at most `limit`.
 */
export async function roomEventsInRange(
  db: Kysely<Schema>,
  roomNid: number,
  range: StreamRange,
  order: 'asc' | 'desc',
  limit: number,
): Promise<EventRow[]> {
  let q = selectEvents(db).where('e.room_nid', '=', roomNid).where('e.stream_ordering', 'is not', null);
  if (range.after !== undefined) q = q.where('e.stream_ordering', '>', range.after);
  if (range.upTo !== undefined) q = q.where('e.stream_ordering', '<=', range.upTo);
  return q.orderBy('e.stream_ordering', order).limit(limit).execute();
}

/** Events of several rooms with stream_ordering in (after, upTo], in stream order, at most `limit`. */
export async function eventsOfRoomsInRange(
  db: Kysely<Schema>,
  roomNids: readonly number[],
  range: StreamRange,
  order: 'asc' | 'desc',
  limit: number,
): Promise<EventRow[]> {
  if (roomNids.length === 0) return [];
  let q = selectEvents(db).where('e.room_nid', 'in', roomNids).where('e.stream_ordering', 'is not', null);
  if (range.after !== undefined) q = q.where('e.stream_ordering', '>', range.after);
  if (range.upTo !== undefined) q = q.where('e.stream_ordering', '<=', range.upTo);
  return q.orderBy('e.stream_ordering', order).limit(limit).execute();
}

/** Which of these rooms have events with stream_ordering in (after, upTo], with their latest position. */
export async function roomsWithEventsInRange(
  db: Kysely<Schema>,
  roomNids: readonly number[],
  range: StreamRange,
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (roomNids.length === 0) return out;
  let q = db
    .selectFrom('events')
    .select(['room_nid', (eb) => eb.fn.max('stream_ordering').as('latest')])
    .where('room_nid', 'in', roomNids)
    .where('stream_ordering', 'is not', null);
  if (range.after !== undefined) q = q.where('stream_ordering', '>', range.after);
  if (range.upTo !== undefined) q = q.where('stream_ordering', '<=', range.upTo);
  for (const r of await q.groupBy('room_nid').execute()) out.set(Number(r.room_nid), Number(r.latest));
  return out;
}

/** A room's timeline state events of one (type, state_key), oldest first: a history of that state entry. */
export async function stateEntryHistory(
  db: Kysely<Schema>,
  roomNid: number,
  type: string,
  stateKeyValue: string,
): Promise<EventRow[]> {
  return selectEvents(db)
    .where('e.room_nid', '=', roomNid)
    .where('e.type', '=', type)
    .where('e.state_key', '=', stateKeyValue)
    .where('e.stream_ordering', 'is not', null)
    .orderBy('e.stream_ordering', 'asc')
    .execute();
}

/** The member events about `userId` (in any room) with stream_ordering in (after, upTo], oldest first. */
export async function memberEventsOfUserInRange(db: Kysely<Schema>, userId: string, range: StreamRange): Promise<EventRow[]> {
  let q = selectEvents(db).where('e.type', '=', 'm.room.member').where('e.state_key', '=', userId).where('e.stream_ordering', 'is not', null);
  if (range.after !== undefined) q = q.where('e.stream_ordering', '>', range.after);
  if (range.upTo !== undefined) q = q.where('e.stream_ordering', '<=', range.upTo);
  return q.orderBy('e.stream_ordering', 'asc').execute();
}

export async function setRedactedBy(trx: Kysely<Schema>, eventId: string, redactionId: string): Promise<void> {
  await trx.updateTable('events').set({ redacted_by: redactionId }).where('event_id', '=', eventId).where('redacted_by', 'is', null).execute();
}

/** An outlier's row once the event is received with its state: what changes, nothing else. */
export async function upgradeOutlierRow(
  trx: Kysely<Schema>,
  eventNid: number,
  row: Pick<NewEventRow, 'status' | 'stream_ordering' | 'rejection_reason' | 'state_before_nid' | 'state_after_nid' | 'unsigned_json' | 'redacted_by'>,
): Promise<void> {
  await trx.updateTable('events').set(row).where('event_nid', '=', eventNid).where('status', '=', 'outlier').execute();
}

/** The JSON of a room's events that mention an mxc URI anywhere (the media admin reads their content). */
export async function eventJsonsMentioningMedia(db: Kysely<Schema>, roomId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('events as e')
    .innerJoin('rooms as r', 'r.room_nid', 'e.room_nid')
    .select('e.json')
    .where('r.room_id', '=', roomId)
    .where('e.json', 'like', '%mxc://%')
    .execute();
  return rows.map((r) => r.json);
}
