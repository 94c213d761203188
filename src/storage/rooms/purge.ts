// Removing a room from the database: its events with their graph references and relations, state snapshots,
// memberships, extremities, aliases, receipts, room account data, key backups, directory listings,
// and the room row itself, in one transaction. The caller makes sure nothing writes the room meanwhile.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

/** Deletes every row of the room; whether the room was known. */
export async function purgeRoomRows(db: Kysely<Schema>, roomId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // Rows keyed by room id exist for rooms never stored too (receipts, account data, aliases).
    await trx.deleteFrom('room_aliases').where('room_id', '=', roomId).execute();
    await trx.deleteFrom('receipts').where('room_id', '=', roomId).execute();
    await trx.deleteFrom('account_data').where('room_id', '=', roomId).execute();
    await trx.deleteFrom('backup_keys').where('room_id', '=', roomId).execute();
    await trx.deleteFrom('appservice_room_list').where('room_id', '=', roomId).execute();
    await trx.deleteFrom('push_notifications').where('room_id', '=', roomId).execute();
    const room = await trx.selectFrom('rooms').select('room_nid').where('room_id', '=', roomId).executeTakeFirst();
    if (room === undefined) return false;
    const roomNid = Number(room.room_nid);
    const events = trx.selectFrom('events').select('event_nid').where('room_nid', '=', roomNid);
    const snapshots = trx.selectFrom('state_snapshots').select('snapshot_nid').where('room_nid', '=', roomNid);
    await trx.deleteFrom('event_auth').where('event_nid', 'in', events).execute();
    await trx.deleteFrom('event_edges').where('event_nid', 'in', events).execute();
    await trx.deleteFrom('state_snapshot_entries').where('snapshot_nid', 'in', snapshots).execute();
    await trx.deleteFrom('state_snapshots').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('current_state_deltas').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('room_memberships').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('forward_extremities').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('backward_extremities').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('room_joined_servers').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('event_relations').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('events').where('room_nid', '=', roomNid).execute();
    await trx.deleteFrom('rooms').where('room_nid', '=', roomNid).execute();
    return true;
  });
}

/** How many rows the room has left in each table keyed by its nid or id (purge tests). */
export async function roomRowCounts(db: Kysely<Schema>, roomId: string, roomNid: number): Promise<Record<string, number>> {
  const count = async (q: { executeTakeFirstOrThrow(): Promise<{ n: number | string | bigint }> }) => Number((await q.executeTakeFirstOrThrow()).n);
  const byNid = ['rooms', 'events', 'event_relations', 'state_snapshots', 'room_memberships', 'forward_extremities', 'backward_extremities', 'current_state_deltas', 'room_joined_servers'] as const;
  const byId = ['room_aliases', 'receipts', 'account_data', 'backup_keys', 'appservice_room_list', 'push_notifications'] as const;
  const out: Record<string, number> = {};
  for (const t of byNid) out[t] = await count(db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).where('room_nid', '=', roomNid));
  for (const t of byId) out[t] = await count(db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).where('room_id', '=', roomId));
  return out;
}
