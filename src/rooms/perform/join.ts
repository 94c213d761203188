// Joining a room by id or alias (rooms of this server only until federation exists). A join that
// repeats the user's current member event stores nothing. Guests join only rooms whose
// m.room.guest_access is can_join.

import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';
import { resolveRoomIdOrAlias } from './alias-target.js';

export interface JoinOptions {
  readonly reason?: string;
  /** Further keys for the member event's content (the server still sets membership and profile). */
  readonly content?: JsonObject;
}

export async function joinRoom(core: RoomCore, actor: Actor, roomIdOrAlias: string, options: JoinOptions = {}): Promise<{ roomId: string }> {
  const roomId = await resolveRoomIdOrAlias(core, roomIdOrAlias);
  const content = await memberContent(core, actor.userId, 'join', {
    ...(options.reason !== undefined ? { reason: options.reason } : {}),
    ...(options.content !== undefined ? { extra: options.content } : {}),
    guest: actor.isGuest === true,
  });
  await core.send(roomId, (head) => {
    if (actor.isGuest === true && head.get('m.room.guest_access')?.content.guest_access !== 'can_join') {
      throw HearthError.forbidden('Guest access is not allowed in this room');
    }
    return { type: 'm.room.member', sender: actor.userId, stateKey: actor.userId, content };
  });
  return { roomId };
}
