// GET /initialSync and GET /rooms/{roomId}/initialSync: the legacy snapshots (deprecated since r0,
// still used by bridges and tools).

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { LegacyInitialSync } from '../../sync/initial-sync.js';
import { DEFAULT_TIMELINE_LIMIT, MAX_TIMELINE_LIMIT } from '../../sync/timeline.js';
import { param, query, queryInt, requester } from '../rooms/fields.js';

const VERSIONS = ['r0', 'v3'];

function booleanParam(req: HttpRequest, key: string): boolean {
  const v = query(req, key);
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw HearthError.invalidParam(`'${key}' must be true or false`);
}

/** Messages per room: 10 unless asked, at most what a sync timeline holds. */
const limitParam = (req: HttpRequest) => queryInt(req, 'limit', DEFAULT_TIMELINE_LIMIT, 0, MAX_TIMELINE_LIMIT);

export function legacyInitialSyncRoutes(deps: { initialSync: LegacyInitialSync }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/initialSync',
      handler: async (req) => {
        const who = requester(req);
        const options = { limit: limitParam(req), archived: booleanParam(req, 'archived') };
        return { body: await deps.initialSync.initialSync({ userId: who.userId, deviceId: who.deviceId }, options) };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/initialSync',
      auth: 'guest',
      handler: async (req) => {
        const who = requester(req);
        const body = await deps.initialSync.roomInitialSync({ userId: who.userId, deviceId: who.deviceId }, param(req, 'roomId'), { limit: limitParam(req) });
        return { body };
      },
    },
  ];
}
