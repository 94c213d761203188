// GET /sync (r0 and v3): reads the query, hands it to the sync service.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { SyncService } from '../../sync/sync-service.js';
import type { PresenceState } from '../../users/presence.js';

const PRESENCE: readonly string[] = ['online', 'offline', 'unavailable'];

function single(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`'${key}' may be given once`);
  return v;
}

function booleanParam(req: HttpRequest, key: string): boolean {
  const v = single(req, key);
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw HearthError.invalidParam(`'${key}' must be true or false`);
}

function timeoutParam(req: HttpRequest): number {
  const v = single(req, 'timeout');
  if (v === undefined || v === '') return 0;
  if (!/^\d{1,15}$/.test(v)) throw HearthError.invalidParam("'timeout' must be a non-negative integer (milliseconds)");
  return Number(v);
}

function presenceParam(req: HttpRequest): PresenceState | undefined {
  const v = single(req, 'set_presence');
  if (v === undefined) return undefined;
  if (!PRESENCE.includes(v)) throw HearthError.invalidParam(`'set_presence' must be one of ${PRESENCE.join(', ')}`);
  return v as PresenceState;
}

export function syncRoutes(deps: { sync: SyncService }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/sync',
      auth: 'guest',
      handler: async (req) => {
        const requester = req.requester;
        if (requester === undefined) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
        const since = single(req, 'since');
        const filter = single(req, 'filter');
        const setPresence = presenceParam(req);
        const timeoutMs = timeoutParam(req);
        const body = await deps.sync.sync({
          userId: requester.userId,
          deviceId: requester.deviceId,
          ...(since !== undefined && since !== '' ? { since } : {}),
          ...(filter !== undefined && filter !== '' ? { filter } : {}),
          fullState: booleanParam(req, 'full_state'),
          ...(setPresence !== undefined ? { setPresence } : {}),
          timeoutMs,
          // Only a sync that may wait needs to hear of the client leaving.
          ...(timeoutMs > 0 && since !== undefined && req.onClientGone !== undefined
            ? { onClientGone: (listener: () => void) => req.onClientGone!(listener) }
            : {}),
        });
        return { body };
      },
    },
  ];
}
