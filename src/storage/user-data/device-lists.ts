// The device_lists stream: which users' devices (or their keys) changed at which position, and
// the membership changes over an events range that make users start or stop sharing rooms.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';
import { allocateStreamPosition } from '../streams.js';

const IDS_PER_STATEMENT = 500;

/** Records that the user's device list changed; returns its position (within the caller's transaction). */
export async function insertDeviceListChange(db: Kysely<Schema>, userId: string): Promise<number> {
  const position = await allocateStreamPosition(db, 'device_lists');
  await db.insertInto('device_list_changes').values({ stream_position: position, user_id: userId }).execute();
  return position;
}

/**
 * Records that the keys of `userIds` changed in a way only `onlyFor` may learn of (signatures made
 * with its user-signing key); one position for them all, returned.
 */
export async function insertPrivateDeviceListChanges(db: Kysely<Schema>, userIds: readonly string[], onlyFor: string): Promise<number> {
  const position = await allocateStreamPosition(db, 'device_lists');
  const unique = [...new Set(userIds)];
  for (let i = 0; i < unique.length; i += IDS_PER_STATEMENT) {
    await db
      .insertInto('device_list_changes')
      .values(unique.slice(i, i + IDS_PER_STATEMENT).map((user_id) => ({ stream_position: position, user_id, only_for: onlyFor })))
      .execute();
  }
  return position;
}

/** The position of the user's last change for everyone before `before` (the `prev_id` of device-list updates). */
export async function previousDeviceListChange(db: Kysely<Schema>, userId: string, before: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('device_list_changes')
    .select('stream_position')
    .where('user_id', '=', userId)
    .where('only_for', 'is', null)
    .where('stream_position', '<', before)
    .orderBy('stream_position', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.stream_position);
}

/** The users whose device lists changed in (after, upTo], for everyone sharing a room with them. */
export async function usersWithDeviceListChanges(db: Kysely<Schema>, after: number, upTo: number): Promise<Set<string>> {
  const rows = await db
    .selectFrom('device_list_changes')
    .select('user_id')
    .distinct()
    .where('stream_position', '>', after)
    .where('stream_position', '<=', upTo)
    .where('only_for', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

/**
 * The device-list changes in (after, upTo] that `userId` may see: `shared`, those for everyone
 * sharing a room with the changed user; `direct`, those meant for `userId` alone. One statement.
 */
export async function deviceListChangesSeenBy(
  db: Kysely<Schema>,
  userId: string,
  after: number,
  upTo: number,
): Promise<{ shared: Set<string>; direct: Set<string> }> {
  const rows = await db
    .selectFrom('device_list_changes')
    .select(['user_id', 'only_for'])
    .distinct()
    .where('stream_position', '>', after)
    .where('stream_position', '<=', upTo)
    .where((eb) => eb.or([eb('only_for', 'is', null), eb('only_for', '=', userId)]))
    .execute();
  const shared = new Set<string>();
  const direct = new Set<string>();
  for (const r of rows) (r.only_for === null ? shared : direct).add(r.user_id);
  return { shared, direct };
}

export interface MemberEventRef {
  readonly roomNid: number;
  readonly eventNid: number;
  readonly stateKey: string;
}

/** The member events that became current state in (after, upTo] in these rooms, plus the user's own anywhere. */
export async function memberEventsInRange(
  db: Kysely<Schema>,
  userId: string,
  roomNids: readonly number[],
  after: number,
  upTo: number,
): Promise<MemberEventRef[]> {
  // Current-state changes of member keys: a member event counts where it became current state.
  const base = () =>
    db
      .selectFrom('current_state_deltas as d')
      .innerJoin('event_state_keys as k', 'k.state_key_nid', 'd.state_key_nid')
      .select(['d.room_nid', 'd.event_nid', 'k.state_key'])
      .where('k.event_type', '=', 'm.room.member')
      .where('d.event_nid', 'is not', null)
      .where('d.position', '>', after)
      .where('d.position', '<=', upTo);
  const own = await base().where('k.state_key', '=', userId).execute();
  const rooms = [...new Set([...roomNids, ...own.map((r) => Number(r.room_nid))])];
  const out = new Map<number, MemberEventRef>();
  for (let i = 0; i < rooms.length; i += IDS_PER_STATEMENT) {
    const rows = await base().where('d.room_nid', 'in', rooms.slice(i, i + IDS_PER_STATEMENT)).execute();
    for (const r of rows) out.set(Number(r.event_nid), { roomNid: Number(r.room_nid), eventNid: Number(r.event_nid), stateKey: r.state_key });
  }
  return [...out.values()];
}
