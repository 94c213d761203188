// Knocking on a room (room versions with knocking): a knock member event with the room's stripped
// state in unsigned.knock_room_state.

import { HearthError } from '../../protocol/errors.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';
import { resolveRoomIdOrAlias } from './alias-target.js';

export async function knockRoom(core: RoomCore, actor: Actor, roomIdOrAlias: string, options: { reason?: string } = {}): Promise<{ roomId: string }> {
  const roomId = await resolveRoomIdOrAlias(core, roomIdOrAlias);
  const content = await memberContent(core, actor.userId, 'knock', options);
  await core.send(roomId, (head) => {
    if (!head.version.knockJoinRule) throw HearthError.forbidden(`Room version ${head.version.id} does not support knocking`);
    return {
      type: 'm.room.member',
      sender: actor.userId,
      stateKey: actor.userId,
      content,
      unsigned: { knock_room_state: head.strippedState() },
    };
  });
  return { roomId };
}
