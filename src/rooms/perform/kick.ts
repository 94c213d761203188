// Kicking: a leave member event for someone else. Only members (joined, invited or knocking) can
// be kicked; the auth rules decide whether the sender may.

import { HearthError } from '../../protocol/errors.js';
import { parseUserId } from '../../protocol/ids.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';

export async function kickUser(core: RoomCore, actor: Actor, roomId: string, target: string, options: { reason?: string } = {}): Promise<void> {
  const userId = parseUserId(target);
  const content = await memberContent(core, userId, 'leave', options);
  await core.send(roomId, (head) => {
    const m = head.membership(userId);
    if (m !== 'join' && m !== 'invite' && m !== 'knock') throw HearthError.forbidden('The target user is not in the room');
    return { type: 'm.room.member', sender: actor.userId, stateKey: userId, content };
  });
}
