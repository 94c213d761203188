// End-to-end encryption key routes: /keys/upload, /keys/query, /keys/claim, /keys/changes, and
// cross-signing's /keys/device_signing/upload and /keys/signatures/upload.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { DeviceListTracker } from '../../sync/device-lists.js';
import type { CrossSigningService } from '../../users/cross-signing.js';
import type { DeviceKeyService } from '../../users/device-keys.js';
import { withUia } from '../account/uia-reply.js';
import { body, missingParam, requesterOf } from '../user-data/fields.js';

const VERSIONS = ['r0', 'v3'] as const;

function queryString(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`'${key}' may be given once`);
  return v === '' ? undefined : v;
}

/**
 * The `timeout` query parameter Synapse reads on /keys/query and /keys/claim: a non-negative
 * integer, how long to wait for other servers (the body's `timeout`, the spec's, comes first).
 */
function timeoutParam(req: HttpRequest): { timeoutMs?: number } {
  const v = queryString(req, 'timeout');
  if (v === undefined) return {};
  if (!/^[0-9]{1,15}$/.test(v)) throw HearthError.invalidParam("Query parameter 'timeout' must be a non-negative integer");
  return { timeoutMs: Number(v) };
}

export function keyRoutes(deps: { deviceKeys: DeviceKeyService; deviceLists: DeviceListTracker; crossSigning: CrossSigningService }): RouteDef[] {
  const { deviceKeys, deviceLists, crossSigning } = deps;
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
        const requester = requesterOf(req);
        const wait = timeoutParam(req);
        return { body: await deviceKeys.query(requester, body(req), wait) };
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
        const wait = timeoutParam(req);
        return { body: await deviceKeys.claim(body(req), wait) };
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
    {
      method: 'POST',
      api: 'client',
      // Added in v1.1, after r0.
      versions: ['v3'],
      path: '/keys/device_signing/upload',
      handler: (req) => withUia(async () => ({ body: await crossSigning.uploadKeys(requesterOf(req), body(req)) })),
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/keys/signatures/upload',
      auth: 'guest',
      handler: async (req) => ({ body: await crossSigning.uploadSignatures(requesterOf(req), body(req)) }),
    },
  ];
}
