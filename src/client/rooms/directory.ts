// Aliases and the published room directory: /directory/room/{alias} PUT, GET, DELETE;
// /rooms/{roomId}/aliases; /directory/list/room/{roomId} GET, PUT; /directory/list/appservice/
// {networkId}/{roomId} PUT; /publicRooms GET, POST.

import { checkAliasClaim } from '../../appservice/claims.js';
import type { AppServices } from '../../appservice/namespaces.js';
import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { directoryNetwork, type PublicRoomsRequest } from '../../rooms/perform/directory.js';
import type { RoomService } from '../../rooms/service.js';
import type { JsonObject } from '../../protocol/json.js';
import { body, optionalBoolean, optionalObject, optionalString, param, query, queryInt, requester, requiredString } from './fields.js';

const VERSIONS = ['r0', 'v3'];

/** filter.room_types: room types, null standing for rooms without a type. */
function optionalRoomTypes(filter: JsonObject): (string | null)[] | undefined {
  const v = filter['room_types'];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((t) => t === null || typeof t === 'string')) {
    throw HearthError.badJson('filter.room_types must be an array of room types (strings) or nulls');
  }
  return v as (string | null)[];
}

export function directoryRoutes(deps: { rooms: RoomService; appServices?: AppServices }): RouteDef[] {
  const { rooms, appServices } = deps;
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/room/:roomAlias',
      handler: async (req) => {
        const alias = param(req, 'roomAlias');
        checkAliasClaim(appServices, requester(req).appserviceId, alias);
        await rooms.createAlias(requester(req), alias, requiredString(body(req), 'room_id'));
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/room/:roomAlias',
      auth: 'none',
      handler: async (req) => ({ body: await rooms.resolveAlias(param(req, 'roomAlias')) }),
    },
    {
      method: 'DELETE',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/room/:roomAlias',
      handler: async (req) => {
        await rooms.deleteAlias(requester(req), param(req, 'roomAlias'));
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/aliases',
      handler: async (req) => ({ body: { aliases: await rooms.roomAliases(requester(req), param(req, 'roomId')) } }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/list/room/:roomId',
      auth: 'none',
      handler: async (req) => ({ body: { visibility: await rooms.directoryVisibility(param(req, 'roomId')) } }),
    },
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/list/room/:roomId',
      handler: async (req) => {
        const visibility = optionalString(body(req), 'visibility') ?? 'public';
        if (visibility !== 'public' && visibility !== 'private') throw HearthError.invalidParam('visibility must be "public" or "private"');
        await rooms.setDirectoryVisibility(requester(req), param(req, 'roomId'), visibility);
        return { body: {} };
      },
    },
    {
      // An application service lists a room in its directory of a network (only services may).
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/directory/list/appservice/:networkId/:roomId',
      handler: async (req) => {
        const asId = requester(req).appserviceId;
        if (asId === undefined) throw HearthError.forbidden('Only application services can edit their network directories');
        const visibility = optionalString(body(req), 'visibility') ?? 'public';
        if (visibility !== 'public' && visibility !== 'private') throw HearthError.invalidParam('visibility must be "public" or "private"');
        await rooms.setAppServiceDirectoryVisibility(asId, param(req, 'networkId'), param(req, 'roomId'), visibility);
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/publicRooms',
      auth: 'optional',
      handler: async (req) => {
        const since = query(req, 'since');
        const server = query(req, 'server');
        const request: PublicRoomsRequest = {
          limit: queryInt(req, 'limit', 100, 0, 500),
          ...(since !== undefined && since !== '' ? { since } : {}),
          ...(server !== undefined && server !== '' ? { server } : {}),
        };
        return { body: await rooms.publicRooms(request) };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/publicRooms',
      handler: async (req) => {
        const b = body(req);
        const filter = optionalObject(b, 'filter');
        const search = filter === undefined ? undefined : optionalString(filter, 'generic_search_term');
        const roomTypes = filter === undefined ? undefined : optionalRoomTypes(filter);
        const since = optionalString(b, 'since');
        const limit = b.limit;
        if (limit !== undefined && limit !== null && (typeof limit !== 'number' || !Number.isInteger(limit))) {
          throw HearthError.badJson('limit must be an integer');
        }
        if (typeof limit === 'number' && limit < 0) throw HearthError.invalidParam('limit must not be negative');
        const network = directoryNetwork(optionalBoolean(b, 'include_all_networks') ?? false, optionalString(b, 'third_party_instance_id'));
        const server = query(req, 'server');
        const request: PublicRoomsRequest = {
          // 100 unless asked; 0 asks for no limit (the most a page holds), as the reference server reads it.
          ...(typeof limit === 'number' ? (limit > 0 ? { limit: Math.min(limit, 500) } : {}) : { limit: 100 }),
          ...(since !== undefined ? { since } : {}),
          ...(search !== undefined ? { searchTerm: search } : {}),
          ...(roomTypes !== undefined ? { roomTypes } : {}),
          ...(server !== undefined && server !== '' ? { server } : {}),
          ...(network !== undefined ? { network } : {}),
        };
        return { body: await rooms.publicRooms(request) };
      },
    },
  ];
}

