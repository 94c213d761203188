// The admin API's user endpoints (after the reference server's): accounts under /v2/users, devices,
// deactivation, password reset, joined rooms, login as a user, the admin flag and rate limits.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import type { AdminUserService } from '../../admin/users.js';
import { body, param, query, requester } from '../rooms/fields.js';
import { queryBool, queryCount } from './query.js';

const MAX_LIMIT = 1000;

function boolField(obj: JsonObject, key: string, fallback: boolean): boolean {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw HearthError.badJson(`Param '${key}' must be a boolean, if given`);
  return v;
}

/** A rate-limit field: a non-negative integer, 0 when absent. */
function rateField(obj: JsonObject, key: string): number {
  const v = obj[key];
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw HearthError.invalidParam(`${key} must be a positive integer`);
  return v;
}

export function adminUserRoutes(deps: { users: AdminUserService }): RouteDef[] {
  const { users } = deps;
  const route = (method: RouteDef['method'], version: string, path: string, handler: RouteDef['handler']): RouteDef => ({ method, api: 'admin', versions: [version], path, handler });
  const empty = { body: {} };
  return [
    route('GET', 'v2', '/users', async (req) => ({
      body: await users.list({
        from: queryCount(req, 'from', 0),
        limit: Math.min(queryCount(req, 'limit', 100), MAX_LIMIT),
        guests: queryBool(req, 'guests') ?? true,
        deactivated: queryBool(req, 'deactivated') ?? false,
        admins: queryBool(req, 'admins'),
        userId: query(req, 'user_id') || undefined,
        name: query(req, 'name') || undefined,
        orderBy: query(req, 'order_by'),
        dir: query(req, 'dir'),
      }),
    })),
    route('GET', 'v2', '/users/:userId', async (req) => ({ body: await users.get(param(req, 'userId')) })),
    route('PUT', 'v2', '/users/:userId', async (req) => {
      const { created, user } = await users.upsert(requester(req), param(req, 'userId'), body(req));
      return { status: created ? 201 : 200, body: user };
    }),
    route('POST', 'v1', '/deactivate/:userId', async (req) => ({ body: await users.deactivateUser(param(req, 'userId'), boolField(body(req), 'erase', false)) })),
    route('POST', 'v1', '/reset_password/:userId', async (req) => {
      const b = body(req);
      const password = b['new_password'];
      if (password === undefined || password === null) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing params: new_password');
      if (typeof password !== 'string') throw HearthError.invalidParam('Invalid password');
      await users.resetPassword(param(req, 'userId'), password, boolField(b, 'logout_devices', true));
      return empty;
    }),
    route('GET', 'v1', '/users/:userId/admin', async (req) => ({ body: { admin: await users.isAdmin(param(req, 'userId')) } })),
    route('PUT', 'v1', '/users/:userId/admin', async (req) => {
      const admin = body(req)['admin'];
      if (admin === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing params: admin');
      if (typeof admin !== 'boolean') throw HearthError.invalidParam("'admin' must be a boolean");
      await users.setAdmin(requester(req), param(req, 'userId'), admin);
      return empty;
    }),
    route('GET', 'v2', '/users/:userId/devices', async (req) => ({ body: await users.devices(param(req, 'userId')) })),
    route('GET', 'v2', '/users/:userId/devices/:deviceId', async (req) => ({ body: await users.device(param(req, 'userId'), param(req, 'deviceId')) })),
    route('PUT', 'v2', '/users/:userId/devices/:deviceId', async (req) => {
      const name = body(req)['display_name'];
      if (name !== undefined && typeof name !== 'string') throw HearthError.invalidParam("'display_name' must be a string");
      await users.renameDevice(param(req, 'userId'), param(req, 'deviceId'), name);
      return empty;
    }),
    route('DELETE', 'v2', '/users/:userId/devices/:deviceId', async (req) => {
      await users.deleteDevices(param(req, 'userId'), [param(req, 'deviceId')]);
      return empty;
    }),
    route('POST', 'v2', '/users/:userId/delete_devices', async (req) => {
      const devices = body(req)['devices'];
      if (devices === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing params: devices');
      if (!Array.isArray(devices) || !devices.every((d) => typeof d === 'string')) throw HearthError.invalidParam("'devices' must be a list of device IDs");
      await users.deleteDevices(param(req, 'userId'), devices as string[]);
      return empty;
    }),
    route('GET', 'v1', '/users/:userId/pushers', async (req) => ({ body: await users.pushers(param(req, 'userId')) })),
    route('GET', 'v1', '/users/:userId/joined_rooms', async (req) => ({ body: await users.joinedRooms(param(req, 'userId')) })),
    route('POST', 'v1', '/users/:userId/login', async (req) => {
      const until = body(req)['valid_until_ms'];
      if (until !== undefined && until !== null && (typeof until !== 'number' || !Number.isSafeInteger(until))) {
        throw HearthError.invalidParam("'valid_until_ms' parameter must be an int");
      }
      return { body: await users.loginAs(requester(req), param(req, 'userId'), until ?? null) };
    }),
    route('GET', 'v1', '/users/:userId/override_ratelimit', async (req) => ({ body: await users.rateLimit(param(req, 'userId')) })),
    route('POST', 'v1', '/users/:userId/override_ratelimit', async (req) => {
      const b = body(req);
      return { body: await users.setRateLimit(param(req, 'userId'), rateField(b, 'messages_per_second'), rateField(b, 'burst_count')) };
    }),
    route('DELETE', 'v1', '/users/:userId/override_ratelimit', async (req) => {
      await users.deleteRateLimit(param(req, 'userId'));
      return empty;
    }),
  ];
}
