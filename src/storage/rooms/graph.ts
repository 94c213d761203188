// The room as an event graph (migration 009): the auth and prev edges of stored events, the prev
// events this server lacks (backward extremities), the current-state deltas by position, each
// room's latest position and joined servers, and positions for backfilled events.

import { sql, type Kysely } from 'kysely';
import { referenceIds, type Pdu } from '../../protocol/events.js';
import type { EventStatus, Schema } from '../schema.js';
import { selectEvents, type EventRow } from './events.js';

/** Ids per IN list, and rows per multi-row insert: far below both backends' parameter limits. */
const IDS_PER_STATEMENT = 5000;
const ROWS_PER_INSERT = 1000;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export interface GraphRow {
  readonly eventNid: number;
  readonly authEventIds: readonly string[];
  readonly prevEventIds: readonly string[];
}

/** The event_auth and event_edges rows of newly stored events (an id cited twice is kept once). */
export async function insertGraphRows(trx: Kysely<Schema>, rows: readonly GraphRow[]): Promise<void> {
  const auth = rows.flatMap((r) => r.authEventIds.map((id) => ({ event_nid: r.eventNid, auth_event_id: id })));
  const edges = rows.flatMap((r) => r.prevEventIds.map((id) => ({ event_nid: r.eventNid, prev_event_id: id })));
  for (const part of chunks(auth, ROWS_PER_INSERT)) {
    await trx.insertInto('event_auth').values(part).onConflict((oc) => oc.doNothing()).execute();
  }
  for (const part of chunks(edges, ROWS_PER_INSERT)) {
    await trx.insertInto('event_edges').values(part).onConflict((oc) => oc.doNothing()).execute();
  }
}

/**
 * Which of these ids some stored event of the room's graph cites as a prev event: a timeline or
 * soft-failed event (an outlier or a rejected event citing it does not stop it being an extremity).
 */
export async function citedAmong(db: Kysely<Schema>, eventIds: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunks([...new Set(eventIds)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('event_edges as g')
      .innerJoin('events as e', 'e.event_nid', 'g.event_nid')
      .select('g.prev_event_id')
      .distinct()
      .where('g.prev_event_id', 'in', part)
      .where('e.status', 'in', ['timeline', 'soft_failed'])
      .execute();
    for (const r of rows) out.add(r.prev_event_id);
  }
  return out;
}

export async function addBackwardExtremities(trx: Kysely<Schema>, roomNid: number, eventIds: readonly string[]): Promise<void> {
  for (const part of chunks([...new Set(eventIds)], ROWS_PER_INSERT)) {
    await trx
      .insertInto('backward_extremities')
      .values(part.map((id) => ({ room_nid: roomNid, event_id: id })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/** Which of these ids are backward extremities of these rooms (the events arrived at last). */
export async function backwardAmong(db: Kysely<Schema>, roomNids: readonly number[], eventIds: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  const rooms = [...new Set(roomNids)];
  if (rooms.length === 0) return out;
  for (const part of chunks([...new Set(eventIds)], Math.max(1, IDS_PER_STATEMENT - rooms.length))) {
    const rows = await db.selectFrom('backward_extremities').select('event_id').where('room_nid', 'in', rooms).where('event_id', 'in', part).execute();
    for (const r of rows) out.add(r.event_id);
  }
  return out;
}

export async function removeBackwardExtremities(trx: Kysely<Schema>, roomNid: number, eventIds: readonly string[]): Promise<void> {
  for (const part of chunks(eventIds, IDS_PER_STATEMENT)) {
    await trx.deleteFrom('backward_extremities').where('room_nid', '=', roomNid).where('event_id', 'in', part).execute();
  }
}

/** The prev events a room's stored events cite that this server does not have, by id. */
export async function backwardExtremities(db: Kysely<Schema>, roomNid: number): Promise<string[]> {
  const rows = await db.selectFrom('backward_extremities').select('event_id').where('room_nid', '=', roomNid).orderBy('event_id').execute();
  return rows.map((r) => r.event_id);
}

/**
 * Up to `limit` of a room's backward extremities, those cited by the deepest events first: the
 * gaps nearest the newest history, where a backfill starts.
 */
export async function deepestBackwardExtremities(db: Kysely<Schema>, roomNid: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('backward_extremities as b')
    .innerJoin('event_edges as g', 'g.prev_event_id', 'b.event_id')
    .innerJoin('events as e', 'e.event_nid', 'g.event_nid')
    .select((eb) => ['b.event_id', eb.fn.max('e.depth').as('depth')])
    .where('b.room_nid', '=', roomNid)
    .where('e.room_nid', '=', roomNid)
    .groupBy('b.event_id')
    .orderBy('depth', 'desc')
    .orderBy('b.event_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.event_id);
}

export interface NewStateDelta {
  readonly position: number;
  readonly roomNid: number;
  readonly stateKeyNid: number;
  /** The event now at the key; null when the key leaves the state. */
  readonly eventNid: number | null;
  /** The event at the key before; null when the key is new. */
  readonly prevEventNid: number | null;
  /** The room's current-state snapshot once this position's changes are made. */
  readonly snapshotNid: number;
}

/** A delta as read back, with the (type, state key) its key nid stands for. */
export interface StateDelta extends NewStateDelta {
  readonly type: string;
  readonly stateKey: string;
}

export async function insertStateDeltas(trx: Kysely<Schema>, rows: readonly NewStateDelta[]): Promise<void> {
  for (const part of chunks(rows, ROWS_PER_INSERT)) {
    await trx
      .insertInto('current_state_deltas')
      .values(
        part.map((d) => ({
          position: d.position,
          room_nid: d.roomNid,
          state_key_nid: d.stateKeyNid,
          event_nid: d.eventNid,
          prev_event_nid: d.prevEventNid,
          snapshot_nid: d.snapshotNid,
        })),
      )
      .execute();
  }
}

/**
 * The current-state deltas with position in (after, upTo], of these rooms (every room when
 * omitted), ordered by position then state key nid.
 */
export async function stateDeltasInRange(
  db: Kysely<Schema>,
  range: { readonly after: number; readonly upTo: number },
  roomNids?: readonly number[],
): Promise<StateDelta[]> {
  const read = (rooms: readonly number[] | undefined) => {
    let q = db
      .selectFrom('current_state_deltas as d')
      .innerJoin('event_state_keys as k', 'k.state_key_nid', 'd.state_key_nid')
      .select(['d.position', 'd.room_nid', 'd.state_key_nid', 'd.event_nid', 'd.prev_event_nid', 'd.snapshot_nid', 'k.event_type', 'k.state_key'])
      .where('d.position', '>', range.after)
      .where('d.position', '<=', range.upTo);
    if (rooms !== undefined) q = q.where('d.room_nid', 'in', rooms);
    return q.orderBy('d.position').orderBy('d.state_key_nid').execute();
  };
  const parts = roomNids === undefined ? [undefined] : chunks(roomNids, IDS_PER_STATEMENT);
  const out: StateDelta[] = [];
  for (const part of parts) {
    for (const r of await read(part)) {
      out.push({
        position: Number(r.position),
        roomNid: Number(r.room_nid),
        stateKeyNid: Number(r.state_key_nid),
        eventNid: r.event_nid === null ? null : Number(r.event_nid),
        prevEventNid: r.prev_event_nid === null ? null : Number(r.prev_event_nid),
        snapshotNid: Number(r.snapshot_nid),
        type: r.event_type,
        stateKey: r.state_key,
      });
    }
  }
  // Rooms read in several parts: one order across them.
  if (parts.length > 1) out.sort((a, b) => a.position - b.position || a.stateKeyNid - b.stateKeyNid);
  return out;
}

/** Moves a room's latest position forward to `position` (never back). */
export async function setLatestPosition(trx: Kysely<Schema>, roomNid: number, position: number): Promise<void> {
  await trx
    .updateTable('rooms')
    .set({ latest_position: position })
    .where('room_nid', '=', roomNid)
    .where((eb) => eb.or([eb('latest_position', 'is', null), eb('latest_position', '<', position)]))
    .execute();
}

/** The latest position of each of these rooms; rooms without a timeline event yet are absent. */
export async function latestPositions(db: Kysely<Schema>, roomNids: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const part of chunks([...new Set(roomNids)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('rooms')
      .select(['room_nid', 'latest_position'])
      .where('room_nid', 'in', part)
      .where('latest_position', 'is not', null)
      .execute();
    for (const r of rows) out.set(Number(r.room_nid), Number(r.latest_position));
  }
  return out;
}

/**
 * `count` positions for backfilled events, within the caller's transaction: negative and
 * decreasing (-1, -2, ... over the server's life), so older history sorts before everything else
 * and is never newer than what a client has seen. The `backfill` row counts them upwards.
 */
export async function allocateBackfillPositions(trx: Kysely<Schema>, count: number): Promise<number[]> {
  if (count <= 0) return [];
  const row = await trx
    .insertInto('stream_positions')
    .values({ stream: 'backfill', position: count })
    .onConflict((oc) => oc.column('stream').doUpdateSet({ position: sql<number>`stream_positions.position + ${count}` }))
    .returning('position')
    .executeTakeFirstOrThrow();
  const first = Number(row.position) - count + 1;
  return Array.from({ length: count }, (_, i) => -(first + i));
}

/**
 * `count` backfill positions taken at once in a transaction of their own, highest first: for events
 * decided one by one, oldest first, that must be numbered newest first. Positions a backfill
 * does not use stay unused.
 */
export async function reserveBackfillPositions(db: Kysely<Schema>, count: number): Promise<number[]> {
  if (count <= 0) return [];
  return db.transaction().execute((trx) => allocateBackfillPositions(trx, count));
}

/** A server's change of joined members in a room, and the position of the last event making it. */
export interface JoinedServerChange {
  readonly change: number;
  readonly position: number;
}

/**
 * Adds each server's change of joined members in a room; servers left with none are removed. A
 * server new to the room is joined since the change's position.
 */
export async function adjustJoinedServers(trx: Kysely<Schema>, roomNid: number, deltas: ReadonlyMap<string, JoinedServerChange>): Promise<void> {
  const changes = [...deltas].filter(([, d]) => d.change !== 0);
  if (changes.length === 0) return;
  for (const part of chunks(changes, ROWS_PER_INSERT)) {
    await trx
      .insertInto('room_joined_servers')
      .values(part.map(([server, d]) => ({ room_nid: roomNid, server_name: server, joined_members: d.change, joined_since: d.position })))
      .onConflict((oc) =>
        oc.columns(['room_nid', 'server_name']).doUpdateSet({
          joined_members: sql<number>`room_joined_servers.joined_members + excluded.joined_members`,
        }),
      )
      .execute();
  }
  await trx
    .deleteFrom('room_joined_servers')
    .where('room_nid', '=', roomNid)
    .where('joined_members', '<=', 0)
    .execute();
}

/** The servers with joined members in a room, by name. */
export async function joinedServers(db: Kysely<Schema>, roomNid: number): Promise<string[]> {
  const rows = await db
    .selectFrom('room_joined_servers')
    .select('server_name')
    .where('room_nid', '=', roomNid)
    .where('joined_members', '>', 0)
    .orderBy('server_name')
    .execute();
  return rows.map((r) => r.server_name);
}

/**
 * The union of the auth chains of these events: their auth events, those events' auth events and
 * so on, as ids of stored events. A given event is in it only when another's chain reaches it.
 * The walk stops at auth events this server does not have (they are not in the result).
 */
export async function authChainIds(db: Kysely<Schema>, eventIds: readonly string[]): Promise<Set<string>> {
  // The first step apart, distinct: the events of a large state share a few auth events (every
  // member cites the same create, power levels and join rules), so the walk then starts from
  // those few rather than following every edge of thousands of events.
  // Events other than state events have no event_auth rows (nothing's chain passes through them):
  // their first step is read from their JSON.
  const first = new Set<string>();
  for (const part of chunks([...new Set(eventIds)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('events as s')
      .leftJoin('event_auth as g', 'g.event_nid', 's.event_nid')
      .select((eb) => ['g.auth_event_id', eb.case().when('s.state_key', 'is', null).then(eb.ref('s.json')).end().as('json')])
      .distinct()
      .where('s.event_id', 'in', part)
      .execute();
    for (const r of rows) {
      if (r.auth_event_id !== null) first.add(r.auth_event_id);
      if (r.json !== null) for (const id of referenceIds((JSON.parse(r.json) as Pdu).auth_events)) first.add(id);
    }
  }
  const out = new Set<string>();
  for (const part of chunks([...first], IDS_PER_STATEMENT)) {
    // UNION (not UNION ALL) drops rows already found, so the walk ends even on a cycle.
    const { rows } = await sql<{ event_id: string }>`
      with recursive chain(event_nid, event_id) as (
        select a.event_nid, a.event_id from events a
          where a.event_id in (${sql.join(part)})
        union
        select a.event_nid, a.event_id from chain c
          join event_auth g on g.event_nid = c.event_nid
          join events a on a.event_id = g.auth_event_id
      )
      select event_id from chain`.execute(db);
    for (const r of rows) out.add(r.event_id);
  }
  return out;
}

/** The status of each of these events that is stored. */
export async function statusesOf(db: Kysely<Schema>, eventIds: readonly string[]): Promise<Map<string, EventStatus>> {
  const out = new Map<string, EventStatus>();
  for (const part of chunks([...new Set(eventIds)], IDS_PER_STATEMENT)) {
    const rows = await db.selectFrom('events').select(['event_id', 'status']).where('event_id', 'in', part).execute();
    for (const r of rows) out.set(r.event_id, r.status);
  }
  return out;
}

/**
 * The stored redactions of `eventId`, oldest first, to apply when the event arrives after them.
 * Rejected redactions are left out: they never take effect. (Whether a redaction may redact its
 * target is for the caller to judge once it has both.)
 */
export async function redactionsTargeting(db: Kysely<Schema>, eventIds: string | readonly string[]): Promise<EventRow[]> {
  const ids = typeof eventIds === 'string' ? [eventIds] : [...new Set(eventIds)];
  const out: EventRow[] = [];
  for (const part of chunks(ids, IDS_PER_STATEMENT)) {
    out.push(...(await selectEvents(db).where('e.redacts', 'in', part).where('e.status', '!=', 'rejected').orderBy('e.event_nid').execute()));
  }
  return out;
}
