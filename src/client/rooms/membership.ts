// Membership: join (by id or alias, and by room id), invite, leave, kick, ban, unban, knock,
// forget, and the rooms a user is joined to.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import type { JsonObject } from '../../protocol/json.js';
import type { JoinOptions } from '../../rooms/perform/join.js';
import type { RoomUpgrades } from '../../rooms/upgrade.js';
import type { RoomService } from '../../rooms/service.js';
import { body, optionalBoolean, optionalObject, optionalString, param, requester, requiredString } from './fields.js';

const VERSIONS = ['r0', 'v3'];

/**
 * A join's body: `reason` (a string), `third_party_signed` (an object; no third-party invites
 * exist here to redeem, so it is only checked), and any other key, which goes into the member
 * event's content as the reference server puts it there.
 */
function joinOptions(req: HttpRequest): JoinOptions {
  const b = body(req);
  const reason = optionalString(b, 'reason');
  optionalObject(b, 'third_party_signed');
  const content: JsonObject = {};
  for (const [k, v] of Object.entries(b)) if (k !== 'reason' && k !== 'third_party_signed') content[k] = v;
  const via = viaOf(req);
  return { ...(reason !== undefined ? { reason } : {}), content, ...(via.length > 0 ? { via } : {}) };
}

/** Servers to join or knock through: `via` (spec 1.12) and the older `server_name`, both repeatable. */
function viaOf(req: HttpRequest): string[] {
  const via: string[] = [];
  for (const key of ['via', 'server_name']) {
    const v = req.query[key];
    for (const s of v === undefined ? [] : Array.isArray(v) ? v : [v]) if (s !== '' && !via.includes(s)) via.push(s);
  }
  return via;
}

export function membershipRoutes(deps: { rooms: RoomService; upgrades: RoomUpgrades }): RouteDef[] {
  const { rooms } = deps;
  // A join of an upgraded room's successor brings the member's tags and direct chats along.
  const join = async (req: HttpRequest, roomIdOrAlias: string) => {
    const actor = requester(req);
    const { roomId } = await rooms.join(actor, roomIdOrAlias, joinOptions(req));
    await deps.upgrades.joined(actor.userId, roomId);
    return { body: { room_id: roomId } };
  };
  const reason = (b: ReturnType<typeof body>) => {
    const r = optionalString(b, 'reason');
    return r === undefined ? {} : { reason: r };
  };
  // POST /rooms/{roomId}/<action> with {user_id, reason}.
  const targeted = (action: string, run: (actor: ReturnType<typeof requester>, roomId: string, userId: string, options: { reason?: string }) => Promise<void>): RouteDef => ({
    method: 'POST',
    api: 'client',
    versions: VERSIONS,
    path: `/rooms/:roomId/${action}`,
    handler: async (req) => {
      const b = body(req);
      await run(requester(req), param(req, 'roomId'), requiredString(b, 'user_id'), reason(b));
      return { body: {} };
    },
  });
  return [
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/join/:roomIdOrAlias',
      auth: 'guest',
      rateLimit: 'joins',
      handler: (req) => join(req, param(req, 'roomIdOrAlias')),
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/join',
      auth: 'guest',
      rateLimit: 'joins',
      handler: (req) => join(req, param(req, 'roomId')),
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['v3'],
      path: '/knock/:roomIdOrAlias',
      handler: async (req) => {
        const via = viaOf(req);
        const { roomId } = await rooms.knock(requester(req), param(req, 'roomIdOrAlias'), { ...reason(body(req)), ...(via.length > 0 ? { via } : {}) });
        return { body: { room_id: roomId } };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/leave',
      auth: 'guest',
      handler: async (req) => {
        await rooms.leave(requester(req), param(req, 'roomId'), reason(body(req)));
        return { body: {} };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/forget',
      handler: async (req) => {
        await rooms.forget(requester(req), param(req, 'roomId'));
        return { body: {} };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/invite',
      rateLimit: 'invites',
      handler: async (req) => {
        const b = body(req);
        const isDirect = optionalBoolean(b, 'is_direct');
        await rooms.invite(requester(req), param(req, 'roomId'), requiredString(b, 'user_id'), {
          ...reason(b),
          ...(isDirect !== undefined ? { isDirect } : {}),
        });
        return { body: {} };
      },
    },
    targeted('kick', (a, r, u, o) => rooms.kick(a, r, u, o)),
    targeted('ban', (a, r, u, o) => rooms.ban(a, r, u, o)),
    targeted('unban', (a, r, u, o) => rooms.unban(a, r, u, o)),
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/joined_rooms',
      auth: 'guest',
      handler: async (req) => ({ body: { joined_rooms: await rooms.joinedRooms(requester(req).userId) } }),
    },
  ];
}
