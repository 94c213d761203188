// What other servers ask about this server's users and rooms: device lists (/user/devices), device
// keys (/user/keys/query), one-time keys (/user/keys/claim) and the public room directory
// (/publicRooms). Only local users
// are answered for; anything asked about other servers' users is left out.

import type { HttpRequest, RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { isUserOf } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { directoryNetwork, type PublicRoomsRequest } from '../rooms/perform/directory.js';
import type { RoomService } from '../rooms/service.js';
import type { DeviceKeyService } from '../users/device-keys.js';

export interface FederationUserRoutesDeps {
  readonly serverName: string;
  readonly deviceKeys: Pick<DeviceKeyService, 'query' | 'claim'>;
  readonly rooms: Pick<RoomService, 'publicRooms'>;
  /** The device-list stream's position: the `stream_id` a device list is current as of. */
  readonly deviceListPosition: () => number;
}

/** The members of `map` whose key is a user of this server. */
function localUsers(map: unknown, name: string, serverName: string): JsonObject {
  if (!isJsonObject(map)) throw HearthError.badJson(`${name} must be an object`);
  return Object.fromEntries(Object.entries(map).filter(([user]) => isUserOf(user, serverName)));
}

function body(req: HttpRequest): JsonObject {
  if (!isJsonObject(req.body)) throw HearthError.badJson('The body must be a JSON object');
  return req.body;
}

function limitOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw HearthError.invalidParam('limit must be a non-negative integer');
  return n;
}

export function federationUserRoutes(deps: FederationUserRoutesDeps): RouteDef[] {
  const { serverName } = deps;
  // A server asks on behalf of nobody: it sees what any user of another server would.
  const asServer = (origin: string) => ({ userId: `@:${origin}`, deviceId: null });
  const publicRooms = async (request: PublicRoomsRequest) => deps.rooms.publicRooms(request);
  return [
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/user/devices/:userId',
      auth: 'server',
      handler: async (req) => {
        const userId = req.params['userId']!;
        const local = localUsers({ [userId]: [] }, 'userId', serverName);
        if (Object.keys(local).length === 0) throw HearthError.invalidParam(`${userId} is not a user of this server`);
        const streamId = deps.deviceListPosition();
        const found = await deps.deviceKeys.query(asServer(req.origin!), { device_keys: local });
        const devices = (found['device_keys'] as Record<string, Record<string, JsonObject>> | undefined)?.[userId] ?? {};
        const master = (found['master_keys'] as JsonObject | undefined)?.[userId];
        const selfSigning = (found['self_signing_keys'] as JsonObject | undefined)?.[userId];
        return {
          body: {
            user_id: userId,
            stream_id: streamId,
            devices: Object.entries(devices).map(([deviceId, keys]) => {
              const name = isJsonObject(keys['unsigned']) ? keys['unsigned']['device_display_name'] : undefined;
              return { device_id: deviceId, keys, ...(typeof name === 'string' ? { device_display_name: name } : {}) };
            }),
            ...(master !== undefined ? { master_key: master } : {}),
            ...(selfSigning !== undefined ? { self_signing_key: selfSigning } : {}),
          },
        };
      },
    },
    {
      method: 'POST',
      api: 'federation',
      versions: ['v1'],
      path: '/user/keys/query',
      auth: 'server',
      handler: async (req) => {
        const wanted = localUsers(body(req)['device_keys'], 'device_keys', serverName);
        const found = await deps.deviceKeys.query(asServer(req.origin!), { device_keys: wanted });
        // Another server gets no user-signing keys and no failures of ours.
        return { body: { device_keys: found['device_keys'] ?? {}, master_keys: found['master_keys'] ?? {}, self_signing_keys: found['self_signing_keys'] ?? {} } };
      },
    },
    {
      method: 'POST',
      api: 'federation',
      versions: ['v1'],
      path: '/user/keys/claim',
      auth: 'server',
      handler: async (req) => {
        const wanted = localUsers(body(req)['one_time_keys'], 'one_time_keys', serverName);
        const claimed = await deps.deviceKeys.claim({ one_time_keys: wanted });
        return { body: { one_time_keys: claimed['one_time_keys'] ?? {} } };
      },
    },
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/publicRooms',
      auth: 'server',
      handler: async (req) => {
        const since = req.query['since'];
        const limit = limitOf(req.query['limit']);
        const instance = req.query['third_party_instance_id'];
        const network = directoryNetwork(req.query['include_all_networks'] === 'true', typeof instance === 'string' ? instance : undefined);
        return {
          body: await publicRooms({
            limit: Math.min(limit ?? 100, 500) || 500,
            ...(typeof since === 'string' && since !== '' ? { since } : {}),
            ...(network !== undefined ? { network } : {}),
          }),
        };
      },
    },
    {
      method: 'POST',
      api: 'federation',
      versions: ['v1'],
      path: '/publicRooms',
      auth: 'server',
      handler: async (req) => {
        const b = body(req);
        const limit = limitOf(b['limit']);
        const since = b['since'];
        const filter = b['filter'];
        const term = isJsonObject(filter) ? filter['generic_search_term'] : undefined;
        const instance = b['third_party_instance_id'];
        const network = directoryNetwork(b['include_all_networks'] === true, typeof instance === 'string' ? instance : undefined);
        return {
          body: await publicRooms({
            limit: Math.min(limit ?? 100, 500) || 500,
            ...(network !== undefined ? { network } : {}),
            ...(typeof since === 'string' && since !== '' ? { since } : {}),
            ...(typeof term === 'string' && term !== '' ? { searchTerm: term } : {}),
          }),
        };
      },
    },
  ];
}
