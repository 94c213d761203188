// Read receipts: one row per (room, receipt type, user, thread), replaced as the user reads on.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export const PRIVATE_READ = 'm.read.private';

export interface ReceiptRow {
  readonly roomId: string;
  readonly receiptType: string;
  readonly userId: string;
  /** '' for an unthreaded receipt. */
  readonly threadId: string;
  readonly eventId: string;
  readonly eventOrder: number | null;
  readonly ts: number;
  readonly position: number;
}

export async function selectReceipt(
  db: Kysely<Schema>,
  key: Pick<ReceiptRow, 'roomId' | 'receiptType' | 'userId' | 'threadId'>,
): Promise<ReceiptRow | undefined> {
  const r = await db
    .selectFrom('receipts')
    .selectAll()
    .where('room_id', '=', key.roomId)
    .where('receipt_type', '=', key.receiptType)
    .where('user_id', '=', key.userId)
    .where('thread_id', '=', key.threadId)
    .executeTakeFirst();
  return r && toRow(r);
}

export async function upsertReceipt(db: Kysely<Schema>, row: ReceiptRow): Promise<void> {
  const values = {
    event_id: row.eventId,
    event_order: row.eventOrder,
    ts: row.ts,
    stream_position: row.position,
  };
  await db
    .insertInto('receipts')
    .values({
      room_id: row.roomId,
      receipt_type: row.receiptType,
      user_id: row.userId,
      thread_id: row.threadId,
      ...values,
    })
    .onConflict((oc) => oc.columns(['room_id', 'receipt_type', 'user_id', 'thread_id']).doUpdateSet(values))
    .execute();
}

const ROOM_BATCH = 500;

/** Receipts of every room with positions in (after, upTo], in position order, at most `limit`. */
export async function selectReceiptsAfter(db: Kysely<Schema>, after: number, upTo: number, limit: number): Promise<ReceiptRow[]> {
  const rows = await db
    .selectFrom('receipts')
    .selectAll()
    .where('stream_position', '>', after)
    .where('stream_position', '<=', upTo)
    .orderBy('stream_position')
    .limit(limit)
    .execute();
  return rows.map(toRow);
}

/**
 * Receipts in these rooms written after `afterPosition`, private ones only when `viewerId` wrote
 * them, in position order.
 */
export async function selectReceiptsSince(
  db: Kysely<Schema>,
  roomIds: readonly string[],
  afterPosition: number,
  viewerId: string,
): Promise<ReceiptRow[]> {
  const out: ReceiptRow[] = [];
  for (let i = 0; i < roomIds.length; i += ROOM_BATCH) {
    const rows = await db
      .selectFrom('receipts')
      .selectAll()
      .where('room_id', 'in', roomIds.slice(i, i + ROOM_BATCH))
      .where('stream_position', '>', afterPosition)
      .where((eb) => eb.or([eb('receipt_type', '!=', PRIVATE_READ), eb('user_id', '=', viewerId)]))
      .orderBy('stream_position')
      .execute();
    for (const r of rows) out.push(toRow(r));
  }
  return out;
}

function toRow(r: {
  room_id: string;
  receipt_type: string;
  user_id: string;
  thread_id: string;
  event_id: string;
  event_order: number | null;
  ts: number;
  stream_position: number;
}): ReceiptRow {
  return {
    roomId: r.room_id,
    receiptType: r.receipt_type,
    userId: r.user_id,
    threadId: r.thread_id,
    eventId: r.event_id,
    eventOrder: r.event_order === null ? null : Number(r.event_order),
    ts: Number(r.ts),
    position: Number(r.stream_position),
  };
}
