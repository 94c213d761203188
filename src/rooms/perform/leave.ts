// Leaving a room, or rejecting an invite, or withdrawing a knock: a leave member event for oneself.

import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';

export async function leaveRoom(core: RoomCore, actor: Actor, roomId: string, options: { reason?: string } = {}): Promise<void> {
  const content = await memberContent(core, actor.userId, 'leave', { ...options, guest: actor.isGuest === true });
  await core.send(roomId, () => ({ type: 'm.room.member', sender: actor.userId, stateKey: actor.userId, content }));
}
