// GET /devices, GET/PUT/DELETE /devices/{deviceId}, POST /delete_devices.

import type { RouteDef } from '../../http/route.js';
import type { AccountService } from '../../users/accounts.js';
import type { DeviceInfo } from '../../users/devices.js';
import { jsonBody, optionalString, requiredStringArray } from './fields.js';
import { withUia } from './uia-reply.js';

function deviceJson(d: DeviceInfo): Record<string, string | number> {
  const out: Record<string, string | number> = { device_id: d.deviceId };
  if (d.displayName !== null) out['display_name'] = d.displayName;
  if (d.lastSeenIp !== null) out['last_seen_ip'] = d.lastSeenIp;
  if (d.lastSeenTs !== null) out['last_seen_ts'] = d.lastSeenTs;
  return out;
}

export function deviceRoutes(deps: { accounts: AccountService }): RouteDef[] {
  const { accounts } = deps;
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/devices',
      handler: async (req) => ({ body: { devices: (await accounts.listDevices(req.requester!.userId)).map(deviceJson) } }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/devices/:deviceId',
      handler: async (req) => ({ body: deviceJson(await accounts.getDevice(req.requester!.userId, req.params['deviceId']!)) }),
    },
    {
      method: 'PUT',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/devices/:deviceId',
      handler: async (req) => {
        const displayName = optionalString(jsonBody(req), 'display_name');
        const { created } = await accounts.updateDevice(req.requester!, req.params['deviceId']!, displayName);
        return { status: created ? 201 : 200, body: {} };
      },
    },
    {
      method: 'DELETE',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/devices/:deviceId',
      body: 'json',
      handler: (req) =>
        withUia(async () => {
          await accounts.deleteDevice(req.requester!, req.params['deviceId']!, { auth: jsonBody(req)['auth'] });
          return { body: {} };
        }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/delete_devices',
      handler: (req) =>
        withUia(async () => {
          const body = jsonBody(req);
          await accounts.deleteDevices(req.requester!, requiredStringArray(body, 'devices'), { auth: body['auth'] });
          return { body: {} };
        }),
    },
  ];
}
