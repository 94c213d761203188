// POST /rooms/{roomId}/upgrade: checked as a real upgrade would be, then refused (rooms/upgrade.ts).

import type { RouteDef } from '../../http/route.js';
import type { RoomUpgrades } from '../../rooms/upgrade.js';
import { body, param, requester } from '../rooms/fields.js';

export function roomUpgradeRoutes(deps: { upgrades: RoomUpgrades }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/upgrade',
      handler: async (req) => deps.upgrades.upgrade(requester(req), param(req, 'roomId'), body(req)),
    },
  ];
}
