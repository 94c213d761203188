// POST /user/{userId}/filter and GET /user/{userId}/filter/{filterId}.

import type { RouteDef } from '../../http/route.js';
import type { FilterService } from '../../users/filters.js';
import { body, param, requesterOf, VERSIONS } from './fields.js';

export function filterRoutes(deps: { filters: FilterService }): RouteDef[] {
  const { filters } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/filter',
      // Guests sync, and syncing clients upload filters.
      auth: 'guest',
      handler: async (req) => ({
        body: { filter_id: await filters.createFilter(requesterOf(req).userId, param(req, 'userId'), body(req)) },
      }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/filter/:filterId',
      auth: 'guest',
      handler: async (req) => ({
        body: await filters.getStoredFilter(requesterOf(req).userId, param(req, 'userId'), param(req, 'filterId')),
      }),
    },
  ];
}
