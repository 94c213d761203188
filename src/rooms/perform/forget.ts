// Forgetting a room the user has left: its history stops being served to them until they rejoin.

import { HearthError } from '../../protocol/errors.js';
import { membershipOf, setForgotten } from '../../storage/rooms/memberships.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';

export async function forgetRoom(core: RoomCore, actor: Actor, roomId: string): Promise<void> {
  const room = await core.reader.roomInfo(roomId);
  if (room === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  const row = await membershipOf(core.db, room.nid, actor.userId);
  if (row === undefined) return;
  if (row.membership !== 'leave' && row.membership !== 'ban') {
    throw new HearthError(400, 'M_UNKNOWN', `User ${actor.userId} is in room ${roomId}; leave it before forgetting it`);
  }
  await setForgotten(core.db, room.nid, actor.userId);
}
