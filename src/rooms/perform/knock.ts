// Knocking on a room (room versions with knocking): a knock member event with the room's stripped
// state in unsigned.knock_room_state; through another server (remote-join.ts) when this one is
// not in the room.

import { HearthError } from '../../protocol/errors.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';
import { resolveRoomIdOrAlias } from './alias-target.js';
import { remoteTarget, type RemoteJoins } from './join.js';
import { refuseBlocked } from './blocked.js';

export async function knockRoom(
  core: RoomCore,
  actor: Actor,
  roomIdOrAlias: string,
  options: { reason?: string; via?: readonly string[] } = {},
  remote?: RemoteJoins,
): Promise<{ roomId: string }> {
  const content = await memberContent(core, actor.userId, 'knock', options.reason === undefined ? {} : { reason: options.reason });
  // A room this server is not in is knocked on through one that is.
  // A blocked room is refused before anyone is asked about it (it may be purged, unknown here).
  if (roomIdOrAlias.startsWith('!')) await refuseBlocked(core, roomIdOrAlias);
  const target = remote === undefined ? undefined : await remoteTarget(core, remote, actor.userId, roomIdOrAlias, options.via ?? []);
  if (target !== undefined && target.roomId !== roomIdOrAlias) await refuseBlocked(core, target.roomId);
  if (target?.servers !== undefined) {
    await remote!.joiner.knock(actor.userId, target.roomId, target.servers, content);
    return { roomId: target.roomId };
  }
  const roomId = target?.roomId ?? (await resolveRoomIdOrAlias(core, roomIdOrAlias));
  if (target === undefined && roomId !== roomIdOrAlias) await refuseBlocked(core, roomId);
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
