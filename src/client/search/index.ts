// POST /search: server-side search of room events (client-server API, "Server Side Search").

import type { RouteDef } from '../../http/route.js';
import type { SearchService } from '../../rooms/search-service.js';
import { body, query, requester } from '../rooms/fields.js';

export function searchRoutes(deps: { search: SearchService }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/search',
      handler: async (req) => ({ body: await deps.search.search(requester(req), body(req), query(req, 'next_batch')) }),
    },
  ];
}
