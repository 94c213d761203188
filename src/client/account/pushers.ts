// GET /pushers and POST /pushers/set (client API, "Push notifications"): the requester's pushers.

import type { RouteDef } from '../../http/route.js';
import type { PusherService } from '../../users/pushers.js';
import { body, requester } from '../rooms/fields.js';

const VERSIONS = ['r0', 'v3'];

export function pusherRoutes(deps: { pushers: PusherService }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/pushers',
      handler: async (req) => ({ body: { pushers: await deps.pushers.list(requester(req).userId) } }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/pushers/set',
      handler: async (req) => {
        await deps.pushers.set(requester(req), body(req));
        return { body: {} };
      },
    },
  ];
}
