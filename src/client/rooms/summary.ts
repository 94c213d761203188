// GET /room_summary/{roomIdOrAlias} (client v1, spec 1.15) and the unstable im.nheko.summary paths
// clients such as Cinny still call (rooms/query/summary.ts). A token is optional: without one, only
// rooms anyone may see are summarised, and the answer has no membership. `via` (repeatable) names
// servers to ask about a room this server is not in.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import type { RoomService } from '../../rooms/service.js';
import { param } from './fields.js';

export function roomSummaryRoutes(deps: { rooms: RoomService }): RouteDef[] {
  const summary = (req: HttpRequest) => {
    const via = req.query['via'];
    const servers = via === undefined ? [] : Array.isArray(via) ? via : [via];
    return deps.rooms.roomSummary(param(req, 'roomIdOrAlias'), req.requester?.userId, servers);
  };
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['v1'],
      path: '/room_summary/:roomIdOrAlias',
      auth: 'optional',
      handler: async (req) => ({ body: await summary(req) }),
    },
    ...['/im.nheko.summary/summary/:roomIdOrAlias', '/im.nheko.summary/rooms/:roomIdOrAlias/summary'].map(
      (path): RouteDef => ({
        method: 'GET',
        api: 'client',
        versions: ['unstable'],
        path,
        auth: 'optional',
        handler: async (req) => {
          const s = await summary(req);
          // The unstable names of the fields MSC3266 first used.
          const unstable = { 'im.nheko.summary.room_version': s.room_version, ...(s.encryption !== undefined ? { 'im.nheko.summary.encryption': s.encryption } : {}) };
          return { body: { ...s, ...unstable } };
        },
      }),
    ),
  ];
}
