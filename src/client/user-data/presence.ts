// PUT and GET /presence/{userId}/status.

import type { RouteDef } from '../../http/route.js';
import type { PresenceService } from '../../users/presence.js';
import { body, param, requesterOf, required, VERSIONS } from './fields.js';

export function presenceRoutes(deps: { presence: PresenceService }): RouteDef[] {
  const { presence } = deps;
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/presence/:userId/status',
      handler: async (req) => {
        const b = body(req);
        await presence.setPresence(requesterOf(req).userId, param(req, 'userId'), required(b, 'presence'), b['status_msg']);
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/presence/:userId/status',
      handler: async (req) => ({ body: await presence.getPresence(requesterOf(req).userId, param(req, 'userId')) }),
    },
  ];
}
