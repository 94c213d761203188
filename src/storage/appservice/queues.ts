// What the application service pusher keeps per service (tables/appservice.ts) and the events it
// reads: the timeline in stream order, every room.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

/** How far a service was sent the streams of ephemeral data that are kept (typing is not). */
export interface EphemeralPositions {
  readonly receipts: number;
  readonly presence: number;
  readonly to_device: number;
}

export interface QueueState {
  readonly lastTxnId: number;
  readonly deliveredPosition: number;
  /** Undefined until the service was first sent ephemeral data. */
  readonly ephemeral?: EphemeralPositions;
  readonly pending?: {
    readonly txnId: number;
    readonly body: string;
    /** The events position the transaction covers (the delivered one when it holds no events). */
    readonly position: number;
    /** What it covers of the ephemeral streams, when it holds ephemeral data. */
    readonly ephemeral?: EphemeralPositions;
  };
}

function parsePositions(text: string | null): EphemeralPositions | undefined {
  if (text === null) return undefined;
  const v = JSON.parse(text) as Partial<Record<keyof EphemeralPositions, unknown>>;
  return { receipts: Number(v.receipts ?? 0), presence: Number(v.presence ?? 0), to_device: Number(v.to_device ?? 0) };
}

export async function queueState(db: Kysely<Schema>, asId: string): Promise<QueueState> {
  const row = await db.selectFrom('appservice_queues').selectAll().where('as_id', '=', asId).executeTakeFirst();
  if (row === undefined) return { lastTxnId: 0, deliveredPosition: 0 };
  const ephemeral = parsePositions(row.ephemeral_positions);
  const pendingEphemeral = parsePositions(row.pending_ephemeral_positions);
  const pending =
    row.pending_txn_id !== null && row.pending_body !== null && row.pending_position !== null
      ? {
          txnId: Number(row.pending_txn_id),
          body: row.pending_body,
          position: Number(row.pending_position),
          ...(pendingEphemeral ? { ephemeral: pendingEphemeral } : {}),
        }
      : undefined;
  return {
    lastTxnId: Number(row.last_txn_id),
    deliveredPosition: Number(row.delivered_position),
    ...(ephemeral ? { ephemeral } : {}),
    ...(pending ? { pending } : {}),
  };
}

/**
 * Records the transaction about to be sent: its id becomes the last one given out. `position`
 * is the events position it covers, `ephemeral` what it covers of the ephemeral streams.
 */
export async function savePending(
  db: Kysely<Schema>,
  asId: string,
  txnId: number,
  body: string,
  position: number,
  ephemeral?: EphemeralPositions,
): Promise<void> {
  const pending = {
    pending_txn_id: txnId,
    pending_body: body,
    pending_position: position,
    pending_ephemeral_positions: ephemeral ? JSON.stringify(ephemeral) : null,
  };
  await db
    .insertInto('appservice_queues')
    .values({ as_id: asId, last_txn_id: txnId, delivered_position: 0, ...pending })
    .onConflict((oc) => oc.column('as_id').doUpdateSet({ last_txn_id: txnId, ...pending }))
    .execute();
}

/**
 * The service has the events up to `position` and, when given, the ephemeral streams up to
 * `ephemeral` (otherwise those stay as they were): nothing is pending any more.
 */
export async function markDelivered(db: Kysely<Schema>, asId: string, position: number, ephemeral?: EphemeralPositions): Promise<void> {
  const done = {
    delivered_position: position,
    pending_txn_id: null,
    pending_body: null,
    pending_position: null,
    pending_ephemeral_positions: null,
    ...(ephemeral ? { ephemeral_positions: JSON.stringify(ephemeral) } : {}),
  };
  await db
    .insertInto('appservice_queues')
    .values({ as_id: asId, last_txn_id: 0, ...done })
    .onConflict((oc) => oc.column('as_id').doUpdateSet(done))
    .execute();
}

export interface TimelineRow {
  readonly position: number;
  readonly nid: number;
}

/**
 * Timeline events after `after` (0 or more), oldest first, at most `limit`. Only timeline events
 * hold stream positions (rooms/persist-event.ts PositionKind), so the position alone selects them:
 * with a status filter too, PostgreSQL without statistics on the table (autovacuum off) guessed few
 * matches and scanned the whole table and sorted it, some 50 ms a read at 150,000 events.
 */
export async function timelineAfter(db: Kysely<Schema>, after: number, limit: number): Promise<TimelineRow[]> {
  const rows = await db
    .selectFrom('events')
    .select(['event_nid', 'stream_ordering'])
    .where('stream_ordering', '>', after)
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
