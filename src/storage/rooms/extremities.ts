// Forward extremities: the events of a room that nothing refers to yet, the prev_events of the
// next event this server sends.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export async function forwardExtremities(db: Kysely<Schema>, roomNid: number): Promise<number[]> {
  const rows = await db.selectFrom('forward_extremities').select('event_nid').where('room_nid', '=', roomNid).execute();
  return rows.map((r) => Number(r.event_nid));
}

/**
 * Replaces a room's extremities. `previousCount` is how many rows the room has: the usual case of
 * one replacing one is a single update.
 */
export async function setForwardExtremities(
  trx: Kysely<Schema>,
  roomNid: number,
  eventNids: readonly number[],
  previousCount: number,
): Promise<void> {
  if (previousCount === 1 && eventNids.length === 1) {
    await trx.updateTable('forward_extremities').set({ event_nid: eventNids[0]! }).where('room_nid', '=', roomNid).execute();
    return;
  }
  if (previousCount > 0) await trx.deleteFrom('forward_extremities').where('room_nid', '=', roomNid).execute();
  if (eventNids.length > 0) {
    await trx
      .insertInto('forward_extremities')
      .values(eventNids.map((n) => ({ room_nid: roomNid, event_nid: n })))
      .execute();
  }
}
