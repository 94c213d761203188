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

/** The users whose device lists changed in (after, upTo]. */
export async function usersWithDeviceListChanges(db: Kysely<Schema>, after: number, upTo: number): Promise<Set<string>> {
  const rows = await db
    .selectFrom('device_list_changes')
    .select('user_id')
    .distinct()
    .where('stream_position', '>', after)
    .where('stream_position', '<=', upTo)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

export interface MemberEventRef {
  readonly roomNid: number;
  readonly eventNid: number;
  readonly stateKey: string;
}

/** The member events in (after, upTo] of these rooms, plus the user's own member events anywhere. */
export async function memberEventsInRange(
  db: Kysely<Schema>,
  userId: string,
  roomNids: readonly number[],
  after: number,
  upTo: number,
): Promise<MemberEventRef[]> {
  const base = () =>
    db
      .selectFrom('events')
      .select(['room_nid', 'event_nid', 'state_key'])
      .where('type', '=', 'm.room.member')
      .where('rejected', '=', 0)
      .where('stream_ordering', '>', after)
      .where('stream_ordering', '<=', upTo);
  const own = await base().where('state_key', '=', userId).execute();
  const rooms = [...new Set([...roomNids, ...own.map((r) => Number(r.room_nid))])];
  const out = new Map<number, MemberEventRef>();
  for (let i = 0; i < rooms.length; i += IDS_PER_STATEMENT) {
    const rows = await base().where('room_nid', 'in', rooms.slice(i, i + IDS_PER_STATEMENT)).execute();
    for (const r of rows) out.set(Number(r.event_nid), { roomNid: Number(r.room_nid), eventNid: Number(r.event_nid), stateKey: r.state_key ?? '' });
  }
  return [...out.values()];
}
