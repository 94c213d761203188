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

/** The servers with a joined member in a room the user is joined to (this server among them). */
export async function serversSharingRoomsWith(db: Kysely<Schema>, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('room_memberships as m')
    .innerJoin('room_joined_servers as j', 'j.room_nid', 'm.room_nid')
    .select('j.server_name')
    .distinct()
    .where('m.user_id', '=', userId)
    .where('m.membership', '=', 'join')
    .where('j.joined_members', '>', 0)
    .execute();
  return rows.map((r) => r.server_name);
}

/** Whether `server` has a joined member in a room the user is joined to. */
export async function serverSharesRoomWith(db: Kysely<Schema>, server: string, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('room_memberships as m')
    .innerJoin('room_joined_servers as j', 'j.room_nid', 'm.room_nid')
    .select('j.room_nid')
    .where('m.user_id', '=', userId)
    .where('m.membership', '=', 'join')
    .where('j.server_name', '=', server)
    .where('j.joined_members', '>', 0)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The events-stream position since which the user has shared a room with a member of `server`
 * without a break: over the rooms they share now, the earliest of the later of the user's member
 * event and the server's joining. Undefined when they share none. A leave and a join again (of
 * either side) moves it on.
 */
export async function serverSharesRoomWithSince(db: Kysely<Schema>, server: string, userId: string): Promise<number | undefined> {
  const rows = await db
    .selectFrom('room_memberships as m')
    .innerJoin('room_joined_servers as j', 'j.room_nid', 'm.room_nid')
    .select(['m.stream_ordering', 'j.joined_since'])
    .where('m.user_id', '=', userId)
    .where('m.membership', '=', 'join')
    .where('j.server_name', '=', server)
    .where('j.joined_members', '>', 0)
    .execute();
  let since: number | undefined;
  for (const r of rows) {
    const shared = Math.max(Number(r.stream_ordering), Number(r.joined_since));
    if (since === undefined || shared < since) since = shared;
  }
  return since;
}
