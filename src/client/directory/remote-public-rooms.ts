// /publicRooms (GET and POST) with `server` naming another server: that server's directory, asked
// of it. The room routes' own /publicRooms knows this server's directory only, so their handlers
// are wrapped here and reached for this server's directory (or when no server is named) only.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { parseServerName } from '../../protocol/ids/server-name.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../../protocol/json.js';
import type { RemotePublicRooms, RemotePublicRoomsRequest } from '../../federation/remote-queries.js';
import { body, requesterOf } from '../user-data/fields.js';

/** The most rooms asked for in one page, as for this server's directory. */
const MAX_LIMIT = 500;

export interface RemoteDirectoryDeps {
  readonly serverName: string;
  /** Another server's public room directory (federation/remote-queries.ts). */
  readonly publicRooms: (server: string, request: RemotePublicRoomsRequest) => Promise<RemotePublicRooms>;
}

function queryString(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`${key} given more than once`);
  return v === '' ? undefined : v;
}

/** A limit of 0 asks for no limit (the other server's own); more than a page holds asks for a page. */
function limitOf(value: JsonValue | undefined, what: string): { limit?: number } {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw HearthError.badJson(`${what} must be an integer`);
  if (value < 0) throw HearthError.invalidParam(`${what} must not be negative`);
  return value === 0 ? {} : { limit: Math.min(value, MAX_LIMIT) };
}

function optional<T>(obj: JsonObject, key: string, type: 'string' | 'boolean'): T | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== type) throw HearthError.badJson(`'${key}' must be a ${type}`);
  return v as T;
}

function getRequest(req: HttpRequest): RemotePublicRoomsRequest {
  const limit = queryString(req, 'limit');
  if (limit !== undefined && !/^\d{1,15}$/.test(limit)) throw HearthError.invalidParam('limit must be a non-negative integer');
  const since = queryString(req, 'since');
  return { ...limitOf(limit === undefined ? undefined : Number(limit), 'limit'), ...(since !== undefined ? { since } : {}) };
}

function postRequest(req: HttpRequest): RemotePublicRoomsRequest {
  const b = body(req);
  const since = optional<string>(b, 'since', 'string');
  const includeAllNetworks = optional<boolean>(b, 'include_all_networks', 'boolean');
  const instanceId = optional<string>(b, 'third_party_instance_id', 'string');
  if (includeAllNetworks === true && instanceId !== undefined) throw HearthError.invalidParam("Can't use include_all_networks with an explicit network");
  const filter = b['filter'];
  if (filter !== undefined && filter !== null && !isJsonObject(filter)) throw HearthError.badJson("'filter' must be an object");
  const term = isJsonObject(filter) ? optional<string>(filter, 'generic_search_term', 'string') : undefined;
  const types = isJsonObject(filter) ? filter['room_types'] : undefined;
  if (types !== undefined && types !== null && (!Array.isArray(types) || !types.every((t) => t === null || typeof t === 'string'))) {
    throw HearthError.badJson('filter.room_types must be an array of room types (strings) or nulls');
  }
  const roomTypes = Array.isArray(types) ? (types as (string | null)[]) : undefined;
  // An empty filter filters nothing: the other server is asked as by GET then.
  const filtered = (term !== undefined && term !== '') || roomTypes !== undefined;
  return {
    ...limitOf(b['limit'], 'limit'),
    ...(since !== undefined && since !== '' ? { since } : {}),
    ...(filtered ? { filter: { ...(term !== undefined && term !== '' ? { generic_search_term: term } : {}), ...(roomTypes !== undefined ? { room_types: roomTypes } : {}) } } : {}),
    ...(includeAllNetworks !== undefined ? { includeAllNetworks } : {}),
    ...(instanceId !== undefined ? { thirdPartyInstanceId: instanceId } : {}),
  };
}

/** `routes` with their client /publicRooms routes answering for other servers' directories too. */
export function withRemoteDirectory(routes: readonly RouteDef[], deps: RemoteDirectoryDeps): RouteDef[] {
  return routes.map((route) => {
    if (route.api !== 'client' || route.path !== '/publicRooms') return route;
    const read = route.method === 'GET' ? getRequest : postRequest;
    return {
      ...route,
      handler: async (req: HttpRequest) => {
        const server = queryString(req, 'server');
        if (server === undefined || server === deps.serverName) return route.handler(req);
        // Anyone may read this server's directory; asking another server takes a user, as in Synapse.
        requesterOf(req);
        const request = read(req);
        return { body: await deps.publicRooms(parseServerName(server), request) };
      },
    };
  });
}
