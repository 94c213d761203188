// Inviting a user. The invite carries the room's stripped state in unsigned.invite_room_state, for
// the invitee's sync to show before they join.

import { parseUserId } from '../../protocol/ids.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';

export async function inviteUser(
  core: RoomCore,
  actor: Actor,
  roomId: string,
  target: string,
  options: { reason?: string; isDirect?: boolean } = {},
): Promise<void> {
  const userId = parseUserId(target);
  await core.head(roomId);
  const content = await memberContent(core, userId, 'invite', options);
  await core.send(roomId, (head) => {
    const inviter = head.get('m.room.member', actor.userId);
    return {
      type: 'm.room.member',
      sender: actor.userId,
      stateKey: userId,
      content,
      unsigned: { invite_room_state: head.strippedState(inviter === undefined ? [] : [inviter]) },
    };
  });
}
