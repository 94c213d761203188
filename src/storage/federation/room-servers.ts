// The servers with joined members in a room (room_joined_servers, kept with the current state).

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export async function joinedServersOf(db: Kysely<Schema>, roomId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('room_joined_servers as j')
    .innerJoin('rooms as r', 'r.room_nid', 'j.room_nid')
    .select('j.server_name')
    .where('r.room_id', '=', roomId)
    .where('j.joined_members', '>', 0)
    .execute();
  return rows.map((r) => r.server_name);
}
