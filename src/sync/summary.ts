// Room summaries (m.heroes, m.joined_member_count, m.invited_member_count): sent when a room is
// new to the client and whenever its membership changed, read for all such rooms in two statements.
// Heroes are the first five other members by stream order who are joined or invited; failing
// those, who left or were banned. A room with a name or canonical alias gets no heroes.

import type { Kysely } from 'kysely';
import type { Schema } from '../storage/schema.js';
import { roomsByIds } from '../storage/rooms/rooms.js';
import { heroesOfRooms } from '../storage/sync/memberships.js';
import type { RoomSummaryFields } from './response.js';

export const HERO_COUNT = 5;

export interface SummaryRoom {
  readonly roomId: string;
  readonly roomNid: number;
}

export interface RoomFacts {
  readonly joinedMembers: number;
  readonly invitedMembers: number;
  /** The current state's snapshot. */
  readonly snapshotNid: number | undefined;
  /** The room has a name or canonical alias, so clients need no heroes to name it. */
  readonly named: boolean;
}

/** Member counts and the current snapshot of rooms, by id. */
export async function roomFacts(db: Kysely<Schema>, roomIds: readonly string[]): Promise<Map<string, RoomFacts>> {
  const out = new Map<string, RoomFacts>();
  for (let i = 0; i < roomIds.length; i += 500) {
    for (const row of await roomsByIds(db, roomIds.slice(i, i + 500))) {
      out.set(row.room_id, {
        joinedMembers: Number(row.joined_members),
        invitedMembers: Number(row.invited_members),
        snapshotNid: row.state_snapshot_nid === null ? undefined : Number(row.state_snapshot_nid),
        named: (row.name ?? '') !== '' || (row.canonical_alias ?? '') !== '',
      });
    }
  }
  return out;
}

export async function roomSummaries(
  db: Kysely<Schema>,
  userId: string,
  rooms: readonly SummaryRoom[],
  facts: ReadonlyMap<string, RoomFacts>,
): Promise<Map<string, RoomSummaryFields>> {
  const out = new Map<string, RoomSummaryFields>();
  if (rooms.length === 0) return out;
  // As the reference server does: a named room's summary has its counts only.
  const nids = rooms.filter((r) => facts.get(r.roomId)?.named !== true).map((r) => r.roomNid);
  const heroes = await heroesOfRooms(db, nids, userId, ['join', 'invite'], HERO_COUNT);
  const lonely = nids.filter((nid) => (heroes.get(nid)?.length ?? 0) === 0);
  const former = lonely.length === 0 ? new Map<number, string[]>() : await heroesOfRooms(db, lonely, userId, ['leave', 'ban'], HERO_COUNT);
  for (const r of rooms) {
    const f = facts.get(r.roomId);
    out.set(r.roomId, {
      ...(f?.named === true ? {} : { 'm.heroes': heroes.get(r.roomNid) ?? former.get(r.roomNid) ?? [] }),
      'm.joined_member_count': f?.joinedMembers ?? 0,
      'm.invited_member_count': f?.invitedMembers ?? 0,
    });
  }
  return out;
}
