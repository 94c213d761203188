// Current-state deltas as sync reads them: how a room's current state changed between two
// positions of the events stream, a user's membership changes across rooms, and the current state
// a room had at a position. The deltas, not the state events at those positions, are the truth:
// a merge of forks can change the current state to an older event, or take a key away.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';
import type { PositionRange } from './events.js';

const ROOMS_PER_STATEMENT = 50;

/** One key of a room's current state changing at a position. */
export interface DeltaRow {
  readonly roomNid: number;
  readonly position: number;
  /** The event now at the key; null when the key left the state. */
  readonly eventNid: number | null;
  /** The event at the key before; null when the key was new. */
  readonly prevEventNid: number | null;
}

/** The user's member key's changes in every room, in (after, upTo], oldest first. */
export async function memberDeltasOfUser(db: Kysely<Schema>, userId: string, range: PositionRange): Promise<DeltaRow[]> {
  let q = db
    .selectFrom('current_state_deltas as d')
    .innerJoin('event_state_keys as k', 'k.state_key_nid', 'd.state_key_nid')
    .select(['d.room_nid', 'd.position', 'd.event_nid', 'd.prev_event_nid'])
    .where('k.event_type', '=', 'm.room.member')
    .where('k.state_key', '=', userId)
    .where('d.position', '<=', range.upTo);
  if (range.after !== undefined) q = q.where('d.position', '>', range.after);
  const rows = await q.orderBy('d.position').execute();
  return rows.map((r) => ({
    roomNid: Number(r.room_nid),
    position: Number(r.position),
    eventNid: r.event_nid === null ? null : Number(r.event_nid),
    prevEventNid: r.prev_event_nid === null ? null : Number(r.prev_event_nid),
  }));
}

/** The user's member key's last change in the room at or before `position`, if any. */
export async function memberDeltaAtOrBefore(db: Kysely<Schema>, roomNid: number, userId: string, position: number): Promise<DeltaRow | undefined> {
  const r = await db
    .selectFrom('current_state_deltas as d')
    .innerJoin('event_state_keys as k', 'k.state_key_nid', 'd.state_key_nid')
    .select(['d.room_nid', 'd.position', 'd.event_nid', 'd.prev_event_nid'])
    .where('d.room_nid', '=', roomNid)
    .where('k.event_type', '=', 'm.room.member')
    .where('k.state_key', '=', userId)
    .where('d.position', '<=', position)
    .orderBy('d.position', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (r === undefined) return undefined;
  return {
    roomNid: Number(r.room_nid),
    position: Number(r.position),
    eventNid: r.event_nid === null ? null : Number(r.event_nid),
    prevEventNid: r.prev_event_nid === null ? null : Number(r.prev_event_nid),
  };
}

/** The (type, state_key) pairs of a room's current state that changed in the range. */
export async function stateKeysChangedInRange(db: Kysely<Schema>, roomNid: number, range: PositionRange): Promise<{ type: string; stateKey: string }[]> {
  let q = db
    .selectFrom('current_state_deltas as d')
    .innerJoin('event_state_keys as k', 'k.state_key_nid', 'd.state_key_nid')
    .select(['k.event_type', 'k.state_key'])
    .distinct()
    .where('d.room_nid', '=', roomNid)
    .where('d.position', '<=', range.upTo);
  if (range.after !== undefined) q = q.where('d.position', '>', range.after);
  const rows = await q.execute();
  return rows.map((r) => ({ type: r.event_type, stateKey: r.state_key }));
}

/**
 * Per room, the snapshot of its current state as it stood at `position` (rooms whose state had
 * not begun by then are absent). Each room's part reads one index entry.
 */
export async function currentSnapshotsAt(db: Kysely<Schema>, roomNids: readonly number[], position: number): Promise<Map<number, number>> {
  const found = await currentSnapshotsBefore(db, roomNids.map((roomNid) => ({ roomNid, position: position + 1 })));
  const out = new Map<number, number>();
  roomNids.forEach((roomNid, i) => {
    const snapshot = found.get(i);
    if (snapshot !== undefined) out.set(roomNid, snapshot);
  });
  return out;
}

/**
 * For each (room, position) asked: the snapshot of the room's current state just before that
 * position, by the ask's index (asks whose room's state had not begun are absent). Each ask reads
 * one index entry.
 */
export async function currentSnapshotsBefore(
  db: Kysely<Schema>,
  asks: readonly { readonly roomNid: number; readonly position: number }[],
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (let i = 0; i < asks.length; i += ROOMS_PER_STATEMENT) {
    const parts = asks.slice(i, i + ROOMS_PER_STATEMENT).map(
      ({ roomNid, position }, n) =>
        sql`select * from (select cast(${i + n} as bigint) as ask, snapshot_nid from current_state_deltas where room_nid = ${roomNid} and position < ${position} order by position desc limit 1) as ${sql.id(`s${n}`)}`,
    );
    const { rows } = await sql<{ ask: number; snapshot_nid: number }>`${sql.join(parts, sql` union all `)}`.execute(db);
    for (const r of rows) out.set(Number(r.ask), Number(r.snapshot_nid));
  }
  return out;
}
