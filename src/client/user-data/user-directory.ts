// POST /user_directory/search.

import type { RouteDef } from '../../http/route.js';
import type { UserDirectoryService } from '../../users/user-directory.js';
import { body, requesterOf, required, VERSIONS } from './fields.js';

export function userDirectoryRoutes(deps: { userDirectory: UserDirectoryService }): RouteDef[] {
  const { userDirectory } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/user_directory/search',
      handler: async (req) => {
        const b = body(req);
        const term = required(b, 'search_term');
        return { body: await userDirectory.search(requesterOf(req).userId, term, b['limit'] ?? undefined) };
      },
    },
  ];
}
