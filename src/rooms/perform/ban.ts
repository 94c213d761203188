// Banning and unbanning. Unbanning is a leave member event for a banned user; anyone else would
// be kicked by it, so it is refused for them.

import { HearthError } from '../../protocol/errors.js';
import { parseUserId } from '../../protocol/ids.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';

export async function banUser(core: RoomCore, actor: Actor, roomId: string, target: string, options: { reason?: string } = {}): Promise<void> {
  const userId = parseUserId(target);
  const content = await memberContent(core, userId, 'ban', options);
  await core.send(roomId, () => ({ type: 'm.room.member', sender: actor.userId, stateKey: userId, content }));
}

export async function unbanUser(core: RoomCore, actor: Actor, roomId: string, target: string, options: { reason?: string } = {}): Promise<void> {
  const userId = parseUserId(target);
  const content = await memberContent(core, userId, 'leave', options);
  await core.send(roomId, (head) => {
    if (head.membership(userId) !== 'ban') throw HearthError.forbidden('The user is not banned');
    return { type: 'm.room.member', sender: actor.userId, stateKey: userId, content };
  });
}
