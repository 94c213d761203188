// POST /rooms/{roomId}/upgrade (rooms/upgrade.ts).

import type { RouteDef } from '../../http/route.js';
import type { RoomUpgrades } from '../../rooms/upgrade.js';
import { body, param, requester } from './fields.js';

export function roomUpgradeRoutes(deps: { upgrades: RoomUpgrades }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/upgrade',
      rateLimit: 'room_creation',
      handler: async (req) => ({ body: await deps.upgrades.upgrade(requester(req), param(req, 'roomId'), body(req)) }),
    },
  ];
}
