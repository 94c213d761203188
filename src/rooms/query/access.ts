// Who may read a room: its members (joined), those who left or were banned (up to that point,
// unless they forgot the room), and anyone when the room is world_readable.

import { HearthError } from '../../protocol/errors.js';
import { membershipOf, type MembershipRow } from '../../storage/rooms/memberships.js';
import { roomById, type RoomRow } from '../../storage/rooms/rooms.js';
import type { RoomCore } from '../core.js';
import type { RoomInfo } from '../reader.js';

export interface RoomAccess {
  readonly room: RoomInfo;
  readonly row: RoomRow;
  /** The user's membership, unless they never had one or forgot the room. */
  readonly membership: MembershipRow | undefined;
  readonly worldReadable: boolean;
}

/** The room and the user's standing in it; 404 M_NOT_FOUND for an unknown room. */
export async function roomAccess(core: RoomCore, roomId: string, userId: string): Promise<RoomAccess> {
  const room = await core.reader.roomInfo(roomId);
  const row = room === undefined ? undefined : await roomById(core.db, roomId);
  if (room === undefined || row === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  const m = await membershipOf(core.db, room.nid, userId);
  return {
    room,
    row,
    membership: m === undefined || m.forgotten !== 0 ? undefined : m,
    worldReadable: row.history_visibility === 'world_readable',
  };
}

export function isJoined(access: RoomAccess): boolean {
  return access.membership?.membership === 'join';
}

/** Whether the user is a former member (left or banned) who still sees history up to then. */
export function isDeparted(access: RoomAccess): boolean {
  const m = access.membership?.membership;
  return m === 'leave' || m === 'ban';
}

/** The room's history may be read at all: joined, departed, or world_readable; else 403. */
export function requireHistoryAccess(access: RoomAccess, userId: string): void {
  if (isJoined(access) || isDeparted(access) || access.worldReadable) return;
  throw HearthError.forbidden(`User ${userId} is not in room ${access.room.roomId}, and the room is not world_readable`);
}
