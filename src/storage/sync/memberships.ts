// Membership reads for sync: room heroes (the first members by stream order, for clients to name
// unnamed rooms) and the user's own read receipts. (A user's membership at a past position comes
// from the current-state deltas: state-deltas.ts.)

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';

const ROOMS_PER_STATEMENT = 50;
const IDS_PER_STATEMENT = 500;

/**
 * Per room, up to `perRoom` users other than `exceptUserId` whose current membership is one of
 * `memberships`, earliest membership change first.
 */
export async function heroesOfRooms(
  db: Kysely<Schema>,
  roomNids: readonly number[],
  exceptUserId: string,
  memberships: readonly string[],
  perRoom: number,
): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  for (let i = 0; i < roomNids.length; i += ROOMS_PER_STATEMENT) {
    const parts = roomNids.slice(i, i + ROOMS_PER_STATEMENT).map(
      (roomNid, n) =>
        sql`select * from (select room_nid, user_id, stream_ordering from room_memberships where room_nid = ${roomNid} and membership in (${sql.join(memberships)}) and user_id != ${exceptUserId} order by stream_ordering asc limit ${perRoom}) as ${sql.id(`h${n}`)}`,
    );
    const { rows } = await sql<{ room_nid: number; user_id: string; stream_ordering: number }>`${sql.join(parts, sql` union all `)}`.execute(db);
    const sorted = [...rows].sort((a, b) => Number(a.stream_ordering) - Number(b.stream_ordering));
    for (const r of sorted) {
      const roomNid = Number(r.room_nid);
      let list = out.get(roomNid);
      if (!list) out.set(roomNid, (list = []));
      list.push(r.user_id);
    }
  }
  return out;
}

/** The receipts that mark what a user has read (public and private). */
export const READ_RECEIPT_TYPES: readonly string[] = ['m.read', 'm.read.private'];

/**
 * Per room, per thread of the user's read receipts ('' unthreaded, 'main', or a thread root), the
 * events-stream position of the latest event they point at (public or private, whichever is ahead).
 */
export async function ownReadPositionsByThread(
  db: Kysely<Schema>,
  userId: string,
  roomIds: readonly string[],
  receiptTypes: readonly string[],
): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  for (let i = 0; i < roomIds.length; i += IDS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('receipts as r')
      .innerJoin('events as e', 'e.event_id', 'r.event_id')
      .select(['r.room_id', 'r.thread_id', (eb) => eb.fn.max('e.stream_ordering').as('position')])
      .where('r.user_id', '=', userId)
      .where('r.room_id', 'in', roomIds.slice(i, i + IDS_PER_STATEMENT))
      .where('r.receipt_type', 'in', receiptTypes)
      .groupBy(['r.room_id', 'r.thread_id'])
      .execute();
    for (const r of rows) {
      if (r.position === null) continue;
      let threads = out.get(r.room_id);
      if (threads === undefined) out.set(r.room_id, (threads = new Map()));
      threads.set(r.thread_id, Number(r.position));
    }
  }
  return out;
}

/**
 * How far a room's thread ('main' or a root) is read, from ownReadPositionsByThread's entry for the
 * room: its own receipt or an unthreaded one, whichever is further; -1 when neither exists.
 */
export function readThrough(receipts: ReadonlyMap<string, number> | undefined, thread: string): number {
  if (receipts === undefined) return -1;
  return Math.max(receipts.get('') ?? -1, receipts.get(thread) ?? -1);
}
