// What the application service pusher keeps per service (tables/appservice.ts) and the events it
// reads: the timeline in stream order, every room.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface QueueState {
  readonly lastTxnId: number;
  readonly deliveredPosition: number;
  readonly pending?: { readonly txnId: number; readonly body: string; readonly position: number };
}

export async function queueState(db: Kysely<Schema>, asId: string): Promise<QueueState> {
  const row = await db.selectFrom('appservice_queues').selectAll().where('as_id', '=', asId).executeTakeFirst();
  if (row === undefined) return { lastTxnId: 0, deliveredPosition: 0 };
  const pending =
    row.pending_txn_id !== null && row.pending_body !== null && row.pending_position !== null
      ? { txnId: Number(row.pending_txn_id), body: row.pending_body, position: Number(row.pending_position) }
      : undefined;
  return { lastTxnId: Number(row.last_txn_id), deliveredPosition: Number(row.delivered_position), ...(pending ? { pending } : {}) };
}

/** Records the transaction about to be sent: its id becomes the last one given out. */
export async function savePending(db: Kysely<Schema>, asId: string, txnId: number, body: string, position: number): Promise<void> {
  await db
    .insertInto('appservice_queues')
    .values({ as_id: asId, last_txn_id: txnId, delivered_position: 0, pending_txn_id: txnId, pending_body: body, pending_position: position })
    .onConflict((oc) => oc.column('as_id').doUpdateSet({ last_txn_id: txnId, pending_txn_id: txnId, pending_body: body, pending_position: position }))
    .execute();
}

/** The service has what came up to `position`: nothing is pending any more. */
export async function markDelivered(db: Kysely<Schema>, asId: string, position: number): Promise<void> {
  await db
    .insertInto('appservice_queues')
    .values({ as_id: asId, last_txn_id: 0, delivered_position: position, pending_txn_id: null, pending_body: null, pending_position: null })
    .onConflict((oc) => oc.column('as_id').doUpdateSet({ delivered_position: position, pending_txn_id: null, pending_body: null, pending_position: null }))
    .execute();
}

export interface TimelineRow {
  readonly position: number;
  readonly nid: number;
}

/** Timeline events after `after`, oldest first, at most `limit`. */
export async function timelineAfter(db: Kysely<Schema>, after: number, limit: number): Promise<TimelineRow[]> {
  const rows = await db
    .selectFrom('events')
    .select(['event_nid', 'stream_ordering'])
    .where('stream_ordering', '>', after)
    .where('status', '=', 'timeline')
    .orderBy('stream_ordering')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ position: Number(r.stream_ordering), nid: Number(r.event_nid) }));
}

/** The room's joined members (any server). */
export async function joinedMembersOf(db: Kysely<Schema>, roomId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('room_memberships as m')
    .innerJoin('rooms as r', 'r.room_nid', 'm.room_nid')
    .select('m.user_id')
    .where('r.room_id', '=', roomId)
    .where('m.membership', '=', 'join')
    .execute();
  return rows.map((r) => r.user_id);
}
