// Joining a room by id or alias. A join that repeats the user's current member event stores
// nothing. Guests join only rooms whose m.room.guest_access is can_join. A restricted room is
// joined with one of this server's users as voucher when the user is in an allowed room
// (restricted-join.ts).
// A room this server is in is joined here; one it is not in (unknown here, or every local member
// has left) is joined through a server that is (remote-join.ts): the inviter's, those the client
// names (`via`), those the alias's server names, the room id's server, and those last known to be
// in the room.

import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, parseRoomId, serverNameOf } from '../../protocol/ids.js';
import type { JsonObject } from '../../protocol/json.js';
import { serverJoinedNow } from '../../storage/rooms/for-servers.js';
import { joinedServers } from '../../storage/rooms/graph.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { memberContent } from './member-event.js';
import { allowedByMembership, needsVoucher, voucherOn } from './restricted-join.js';
import { stateKey } from '../../protocol/events.js';
import { resolveRoomIdOrAlias } from './alias-target.js';
import type { RemoteJoiner } from './remote-join.js';
import { inviterServerOf } from './remote-invite.js';
import { refuseBlocked } from './blocked.js';

export interface JoinOptions {
  readonly reason?: string;
  /** Further keys for the member event's content (the server still sets membership and profile). */
  readonly content?: JsonObject;
  /** Servers to join through when this server is not in the room. */
  readonly via?: readonly string[];
}

/** Joining through other servers: the joiner, and where another server's alias leads. */
export interface RemoteJoins {
  readonly joiner: RemoteJoiner;
  resolveAlias(alias: string): Promise<{ room_id: string; servers: string[] }>;
}

export async function joinRoom(
  core: RoomCore,
  actor: Actor,
  roomIdOrAlias: string,
  options: JoinOptions = {},
  remote?: RemoteJoins,
): Promise<{ roomId: string }> {
  const content = await memberContent(core, actor.userId, 'join', {
    ...(options.reason !== undefined ? { reason: options.reason } : {}),
    ...(options.content !== undefined ? { extra: options.content } : {}),
    guest: actor.isGuest === true,
  });
  // A blocked room is refused before anyone is asked about it (it may be purged, unknown here).
  if (roomIdOrAlias.startsWith('!')) await refuseBlocked(core, roomIdOrAlias);
  const target = remote === undefined ? undefined : await remoteTarget(core, remote, actor.userId, roomIdOrAlias, options.via ?? []);
  if (target !== undefined && target.roomId !== roomIdOrAlias) await refuseBlocked(core, target.roomId);
  if (target?.servers !== undefined) {
    await remote!.joiner.join(actor.userId, target.roomId, target.servers, content);
    return { roomId: target.roomId };
  }
  const roomId = target?.roomId ?? (await resolveRoomIdOrAlias(core, roomIdOrAlias));
  if (target === undefined && roomId !== roomIdOrAlias) await refuseBlocked(core, roomId);
  // A restricted room: this server vouches for the join when the user is in an allowed room.
  const before = await core.head(roomId);
  await before.load([stateKey('m.room.join_rules', ''), stateKey('m.room.power_levels', '')]);
  const vouch = needsVoucher(before)(actor.userId) && (await allowedByMembership(core, before.get('m.room.join_rules'), actor.userId)) === 'allowed';
  await core.send(roomId, (head) => {
    if (actor.isGuest === true && head.get('m.room.guest_access')?.content.guest_access !== 'can_join') {
      throw HearthError.forbidden('Guest access is not allowed in this room');
    }
    const voucher = vouch && needsVoucher(head)(actor.userId) ? voucherOn(head, core.serverName) : undefined;
    const vouched = voucher === undefined ? content : { ...content, join_authorised_via_users_server: voucher };
    return { type: 'm.room.member', sender: actor.userId, stateKey: actor.userId, content: vouched };
  });
  return { roomId };
}

/**
 * The room and, when this server is not in it, the servers to join it through (undefined: join
 * here). A room this server never had and no server to ask is 404.
 */
export async function remoteTarget(
  core: RoomCore,
  remote: RemoteJoins,
  userId: string,
  roomIdOrAlias: string,
  via: readonly string[],
): Promise<{ roomId: string; servers?: string[] }> {
  let roomId: ReturnType<typeof parseRoomId>;
  const servers: string[] = [...via];
  if (roomIdOrAlias.startsWith('#') && serverNameOf(parseRoomAlias(roomIdOrAlias)) !== core.serverName) {
    const found = await remote.resolveAlias(roomIdOrAlias);
    roomId = parseRoomId(found.room_id);
    servers.push(...found.servers);
  } else if (roomIdOrAlias.startsWith('!')) {
    roomId = parseRoomId(roomIdOrAlias);
  } else {
    return { roomId: await resolveRoomIdOrAlias(core, roomIdOrAlias) };
  }
  const head = await core.findHead(roomId);
  if (head?.roomNid !== undefined) {
    if (await serverJoinedNow(core.db, head.roomNid, core.serverName)) return { roomId };
    const inviter = await inviterServerOf(head, userId);
    if (inviter !== undefined) servers.unshift(inviter);
    servers.push(...(await joinedServers(core.db, head.roomNid)));
  }
  // A v12 room id names no server.
  const roomServer = serverNameOf(roomId);
  if (roomServer !== undefined) servers.push(roomServer);
  const others = [...new Set(servers)].filter((s) => s !== core.serverName);
  if (others.length === 0) {
    if (head !== undefined) return { roomId };
    throw HearthError.notFound(`Unknown room ${roomId}`);
  }
  return { roomId, servers: others };
}
