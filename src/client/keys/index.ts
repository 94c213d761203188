// End-to-end encryption key routes: /keys/upload, /keys/query, /keys/claim and /keys/changes.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { DeviceListTracker } from '../../sync/device-lists.js';
import type { DeviceKeyService } from '../../users/device-keys.js';
import { body, missingParam, requesterOf } from '../user-data/fields.js';

const VERSIONS = ['r0', 'v3'] as const;

function queryString(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`'${key}' may be given once`);
  return v === '' ? undefined : v;
}

export function keyRoutes(deps: { deviceKeys: DeviceKeyService; deviceLists: DeviceListTracker }): RouteDef[] {
  const { deviceKeys, deviceLists } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/keys/upload',
      auth: 'guest',
      handler: async (req) => ({ body: await deviceKeys.upload(requesterOf(req), body(req)) }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/keys/query',
      auth: 'guest',
      handler: async (req) => {
        requesterOf(req);
        return { body: await deviceKeys.query(body(req)) };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/keys/claim',
      auth: 'guest',
      handler: async (req) => {
        requesterOf(req);
        return { body: await deviceKeys.claim(body(req)) };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/keys/changes',
      auth: 'guest',
      handler: async (req) => {
        const requester = requesterOf(req);
        const from = queryString(req, 'from');
        if (from === undefined) throw missingParam('from');
        return { body: await deviceLists.changesBetween(requester.userId, from, queryString(req, 'to')) };
      },
    },
  ];
}
