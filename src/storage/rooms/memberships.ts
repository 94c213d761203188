// Current memberships: one row per (room, user) with the latest membership, for "rooms of a user"
// and member lists without reading room state.

import type { Kysely, Selectable } from 'kysely';
import type { RoomMembershipsTable, Schema } from '../schema.js';

export type MembershipRow = Selectable<RoomMembershipsTable>;

export interface NewMembership {
  readonly roomNid: number;
  readonly userId: string;
  readonly membership: string;
  readonly eventNid: number;
  readonly streamOrdering: number;
}

const ROWS_PER_STATEMENT = 1000;

/** Memberships of several users at once; one row per (room, user) at most. */
export async function upsertMemberships(trx: Kysely<Schema>, rows: readonly NewMembership[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    await trx
      .insertInto('room_memberships')
      .values(
        rows.slice(i, i + ROWS_PER_STATEMENT).map((r) => ({
          room_nid: r.roomNid,
          user_id: r.userId,
          membership: r.membership,
          event_nid: r.eventNid,
          stream_ordering: r.streamOrdering,
          forgotten: 0,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['room_nid', 'user_id']).doUpdateSet((eb) => ({
          membership: eb.ref('excluded.membership'),
          event_nid: eb.ref('excluded.event_nid'),
          stream_ordering: eb.ref('excluded.stream_ordering'),
          forgotten: 0,
        })),
      )
      .execute();
  }
}

/** The membership rows of users of a room whose member events left its current state. */
export async function deleteMemberships(trx: Kysely<Schema>, roomNid: number, userIds: readonly string[]): Promise<void> {
  for (let i = 0; i < userIds.length; i += ROWS_PER_STATEMENT) {
    await trx.deleteFrom('room_memberships').where('room_nid', '=', roomNid).where('user_id', 'in', userIds.slice(i, i + ROWS_PER_STATEMENT)).execute();
  }
}

export async function membershipOf(db: Kysely<Schema>, roomNid: number, userId: string): Promise<MembershipRow | undefined> {
  return db
    .selectFrom('room_memberships')
    .selectAll()
    .where('room_nid', '=', roomNid)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** A user's rooms with their membership and room id; `memberships` narrows to those values. */
export async function roomsOfUser(
  db: Kysely<Schema>,
  userId: string,
  memberships?: readonly string[],
): Promise<(MembershipRow & { room_id: string })[]> {
  let q = db
    .selectFrom('room_memberships as m')
    .innerJoin('rooms as r', 'r.room_nid', 'm.room_nid')
    .selectAll('m')
    .select('r.room_id')
    .where('m.user_id', '=', userId);
  if (memberships !== undefined) q = q.where('m.membership', 'in', memberships);
  return q.orderBy('m.stream_ordering', 'asc').execute();
}

/** A room's members with the given memberships (all when omitted). */
export async function membersOfRoom(db: Kysely<Schema>, roomNid: number, memberships?: readonly string[]): Promise<MembershipRow[]> {
  let q = db.selectFrom('room_memberships').selectAll().where('room_nid', '=', roomNid);
  if (memberships !== undefined) q = q.where('membership', 'in', memberships);
  return q.orderBy('user_id').execute();
}

export async function setForgotten(db: Kysely<Schema>, roomNid: number, userId: string): Promise<void> {
  await db.updateTable('room_memberships').set({ forgotten: 1 }).where('room_nid', '=', roomNid).where('user_id', '=', userId).execute();
}

/** Whether `userId` is joined to the room with id `roomId`. */
export async function isJoinedTo(db: Kysely<Schema>, userId: string, roomId: string): Promise<boolean> {
  const row = await db
    .selectFrom('room_memberships as m')
    .innerJoin('rooms as r', 'r.room_nid', 'm.room_nid')
    .select('m.membership')
    .where('r.room_id', '=', roomId)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
  return row?.membership === 'join';
}

/** Every user joined to a room `userId` is joined to (the user included, if joined anywhere). */
export async function usersSharingRooms(db: Kysely<Schema>, userId: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('room_memberships as mine')
    .innerJoin('room_memberships as other', 'other.room_nid', 'mine.room_nid')
    .select('other.user_id')
    .distinct()
    .where('mine.user_id', '=', userId)
    .where('mine.membership', '=', 'join')
    .where('other.membership', '=', 'join')
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

/**
 * Every user joined to a public room: one whose join rule is public or whose history is
 * world-readable, as the user directory counts them (whether the room is published or not).
 */
export async function usersInPublicRooms(db: Kysely<Schema>): Promise<Set<string>> {
  const rows = await db
    .selectFrom('room_memberships as m')
    .innerJoin('rooms as r', 'r.room_nid', 'm.room_nid')
    .select('m.user_id')
    .distinct()
    .where((eb) => eb.or([eb('r.join_rule', '=', 'public'), eb('r.history_visibility', '=', 'world_readable')]))
    .where('m.membership', '=', 'join')
    .execute();
  return new Set(rows.map((r) => r.user_id));
}
