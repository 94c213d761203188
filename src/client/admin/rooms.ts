// The admin API's rooms (as the reference server's /_synapse/admin/v1|v2/rooms): the list, a
// room's details, members, state and messages, its deletion (at once, or in the background with a status)
// and blocking.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import { parseRoomEventFilterParam } from '../../protocol/filters.js';
import { ROOM_ORDERS, type AdminRoomViews, type RoomOrder } from '../../rooms/admin/room-details.js';
import type { RoomShutdowns, ShutdownRequest } from '../../rooms/admin/shutdown.js';
import { body, optionalBoolean, optionalString, param, query, queryInt, requester } from '../rooms/fields.js';

const MAX_LIMIT = 1_000_000;

/** dir: f (default) or b; 400 M_INVALID_PARAM otherwise. */
export function queryDir(req: HttpRequest, fallback: 'f' | 'b'): 'f' | 'b' {
  const dir = query(req, 'dir') ?? fallback;
  if (dir !== 'f' && dir !== 'b') throw HearthError.invalidParam("Unknown direction: dir must be 'f' or 'b'");
  return dir;
}

function shutdownRequest(req: HttpRequest): ShutdownRequest {
  const b: JsonObject = body(req);
  const newRoomUserId = optionalString(b, 'new_room_user_id');
  const roomName = optionalString(b, 'room_name');
  const message = optionalString(b, 'message');
  return {
    requester: requester(req).userId,
    ...(newRoomUserId !== undefined ? { newRoomUserId } : {}),
    ...(roomName !== undefined ? { roomName } : {}),
    ...(message !== undefined ? { message } : {}),
    block: optionalBoolean(b, 'block') ?? false,
    purge: optionalBoolean(b, 'purge') ?? true,
    forcePurge: optionalBoolean(b, 'force_purge') ?? false,
  };
}

export function adminRoomRoutes(deps: { views: AdminRoomViews; shutdowns: RoomShutdowns }): RouteDef[] {
  const { views, shutdowns } = deps;
  return [
    {
      method: 'GET',
      api: 'admin',
      versions: ['v1'],
      path: '/rooms',
      handler: async (req) => {
        const orderBy = query(req, 'order_by') ?? 'name';
        if (!(ROOM_ORDERS as readonly string[]).includes(orderBy)) throw HearthError.invalidParam(`Unknown value for order_by: ${orderBy}`);
        const searchTerm = query(req, 'search_term');
        if (searchTerm === '') throw HearthError.invalidParam('search_term cannot be empty');
        return {
          body: await views.list({
            from: queryInt(req, 'from', 0, 0, MAX_LIMIT),
            limit: queryInt(req, 'limit', 100, 0, MAX_LIMIT),
            orderBy: orderBy as RoomOrder,
            dir: queryDir(req, 'f'),
            ...(searchTerm !== undefined ? { searchTerm } : {}),
          }),
        };
      },
    },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/rooms/:roomId', handler: async (req) => ({ body: await views.details(param(req, 'roomId')) }) },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/rooms/:roomId/members', handler: async (req) => ({ body: await views.members(param(req, 'roomId')) }) },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/rooms/:roomId/state', handler: async (req) => ({ body: await views.state(param(req, 'roomId')) }) },
    {
      method: 'GET',
      api: 'admin',
      versions: ['v1'],
      path: '/rooms/:roomId/messages',
      handler: async (req) => {
        const dir = queryDir(req, 'f');
        const from = query(req, 'from');
        const to = query(req, 'to');
        const text = query(req, 'filter');
        const filter = text === undefined || text === '' ? undefined : parseRoomEventFilterParam(text);
        const limit = queryInt(req, 'limit', filter?.limit ?? 10, 0, 1000);
        return {
          body: await views.messages(param(req, 'roomId'), requester(req).userId, {
            dir,
            limit,
            ...(from !== undefined && from !== '' ? { from } : {}),
            ...(to !== undefined && to !== '' ? { to } : {}),
            ...(filter !== undefined ? { filter } : {}),
          }),
        };
      },
    },
    {
      method: 'DELETE',
      api: 'admin',
      versions: ['v1'],
      path: '/rooms/:roomId',
      body: 'json',
      handler: async (req) => ({ body: await shutdowns.shutdown(param(req, 'roomId'), shutdownRequest(req)) }),
    },
    {
      method: 'DELETE',
      api: 'admin',
      versions: ['v2'],
      path: '/rooms/:roomId',
      body: 'json',
      handler: async (req) => ({ body: await shutdowns.startDelete(param(req, 'roomId'), shutdownRequest(req)) }),
    },
    { method: 'GET', api: 'admin', versions: ['v2'], path: '/rooms/:roomId/delete_status', handler: async (req) => ({ body: await shutdowns.statusesOfRoom(param(req, 'roomId')) }) },
    { method: 'GET', api: 'admin', versions: ['v2'], path: '/rooms/delete_status/:deleteId', handler: async (req) => ({ body: await shutdowns.statusOf(param(req, 'deleteId')) }) },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/rooms/:roomId/block', handler: async (req) => ({ body: await shutdowns.blockStatus(param(req, 'roomId')) }) },
    {
      method: 'PUT',
      api: 'admin',
      versions: ['v1'],
      path: '/rooms/:roomId/block',
      handler: async (req) => {
        const block = optionalBoolean(body(req), 'block');
        if (block === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing parameter: block');
        return { body: await shutdowns.setBlocked(param(req, 'roomId'), block, requester(req).userId) };
      },
    },
  ];
}
