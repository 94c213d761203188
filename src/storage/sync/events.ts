// Event reads for sync, by position on the events stream: the latest events of many rooms in one
// statement, everything that happened in a range (shared by every sync covering it) with the
// current-state changes at its positions, and the history of one state entry in many rooms.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';
import { stateDeltasInRange } from '../rooms/graph.js';

export interface PositionRange {
  /** Exclusive lower bound on stream_ordering; undefined: from the room's start. */
  readonly after?: number;
  /** Inclusive upper bound on stream_ordering. */
  readonly upTo: number;
}

export interface EventPosition {
  readonly roomNid: number;
  readonly eventNid: number;
  readonly position: number;
}

/**
 * Rooms per statement: one sub-select each, joined by UNION ALL (SQLite allows 500 compound
 * terms; a smaller batch keeps each statement's plan and parameter list small).
 */
const ROOMS_PER_STATEMENT = 50;

/**
 * For each room, its latest `perRoom` events with stream_ordering in the
 * range, newest first. Each room's part reads its own index range, so the cost is what is
 * returned, whatever the rooms' sizes.
 */
export async function latestEventsOfRooms(
  db: Kysely<Schema>,
  roomNids: readonly number[],
  range: PositionRange,
  perRoom: number,
): Promise<Map<number, EventPosition[]>> {
  const out = new Map<number, EventPosition[]>();
  if (perRoom <= 0) return out;
  for (let i = 0; i < roomNids.length; i += ROOMS_PER_STATEMENT) {
    const parts = roomNids.slice(i, i + ROOMS_PER_STATEMENT).map((roomNid, n) => {
      const after = range.after === undefined ? sql`` : sql` and stream_ordering > ${range.after}`;
      return sql`select * from (select room_nid, event_nid, stream_ordering from events where room_nid = ${roomNid} and stream_ordering <= ${range.upTo}${after} order by stream_ordering desc limit ${perRoom}) as ${sql.id(`r${n}`)}`;
    });
    const query = sql.join(parts, sql` union all `);
    const { rows } = await sql<{ room_nid: number; event_nid: number; stream_ordering: number }>`${query}`.execute(db);
    for (const r of rows) {
      const roomNid = Number(r.room_nid);
      let list = out.get(roomNid);
      if (!list) out.set(roomNid, (list = []));
      list.push({ roomNid, eventNid: Number(r.event_nid), position: Number(r.stream_ordering) });
    }
  }
  for (const list of out.values()) list.sort((a, b) => b.position - a.position);
  return out;
}

export interface StateEntryChange {
  readonly roomNid: number;
  readonly position: number;
  /** The event's JSON (the PDU), for its content. */
  readonly json: string;
}

/**
 * The events of one (type, state_key) entry in each of these rooms, oldest first per room: the
 * history of a room's setting or of one user's membership, for many rooms in one read. Besides
 * the entry's events at their own positions, its changes in the current state (the deltas), after
 * the event at the same position: a merge of forks can make current an event without a position
 * of its own (a soft-failed join) or an older one again, and the entry changed there all the same.
 */
export async function stateEntryHistories(
  db: Kysely<Schema>,
  roomNids: readonly number[],
  type: string,
  stateKeyValue: string,
): Promise<Map<number, StateEntryChange[]>> {
  const out = new Map<number, StateEntryChange[]>();
  for (let i = 0; i < roomNids.length; i += 500) {
    const nids = roomNids.slice(i, i + 500);
    const { rows } = await sql<{ room_nid: number; position: number; json: string | null; kind: number }>`
      select room_nid, stream_ordering as position, json, 0 as kind from events
        where room_nid in (${sql.join(nids)}) and type = ${type} and state_key = ${stateKeyValue} and stream_ordering is not null
      union all
      select d.room_nid, d.position, e.json, 1 as kind from current_state_deltas d
        join event_state_keys k on k.state_key_nid = d.state_key_nid
        left join events e on e.event_nid = d.event_nid
        where d.room_nid in (${sql.join(nids)}) and k.event_type = ${type} and k.state_key = ${stateKeyValue}
      order by position, kind`.execute(db);
    for (const r of rows) {
      const roomNid = Number(r.room_nid);
      let list = out.get(roomNid);
      if (!list) out.set(roomNid, (list = []));
      // A key that left the state reads as its fallback value.
      list.push({ roomNid, position: Number(r.position), json: r.json ?? '{}' });
    }
  }
  return out;
}

/** One key of a room's current state changing at an event's position. */
export interface StreamStateChange {
  readonly type: string;
  readonly stateKey: string;
  /** The event now at the key; null when the key left the state. */
  readonly eventNid: number | null;
  readonly prevEventNid: number | null;
}

export interface StreamEvent {
  readonly roomNid: number;
  readonly eventNid: number;
  readonly position: number;
  readonly type: string;
  readonly stateKey: string | undefined;
  /** How the room's current state changed at this position (none: unchanged). */
  readonly changes?: readonly StreamStateChange[];
}

/**
 * Every event of the server with stream_ordering in (after, upTo], oldest first, at most `limit`:
 * what changed on the events stream, for every sync that covers the same range.
 */
export async function eventsInStreamRange(db: Kysely<Schema>, after: number, upTo: number, limit: number): Promise<StreamEvent[]> {
  const rows = await db
    .selectFrom('events')
    .select(['room_nid', 'event_nid', 'stream_ordering', 'type', 'state_key'])
    .where('stream_ordering', '>', after)
    .where('stream_ordering', '<=', upTo)
    .orderBy('stream_ordering', 'asc')
    .limit(limit)
    .execute();
  const last = rows.length === 0 ? after : Number(rows[rows.length - 1]!.stream_ordering);
  const changes = new Map<number, StreamStateChange[]>();
  if (rows.length > 0) {
    for (const d of await stateDeltasInRange(db, { after, upTo: last })) {
      let list = changes.get(d.position);
      if (!list) changes.set(d.position, (list = []));
      list.push({ type: d.type, stateKey: d.stateKey, eventNid: d.eventNid, prevEventNid: d.prevEventNid });
    }
  }
  return rows.map((r) => {
    const position = Number(r.stream_ordering);
    const changed = changes.get(position);
    return {
      roomNid: Number(r.room_nid),
      eventNid: Number(r.event_nid),
      position,
      type: r.type,
      stateKey: r.state_key ?? undefined,
      ...(changed !== undefined ? { changes: changed } : {}),
    };
  });
}
