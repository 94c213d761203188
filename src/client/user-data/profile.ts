// GET /profile/{userId}, GET and PUT /profile/{userId}/displayname and /avatar_url.

import type { RouteDef } from '../../http/route.js';
import type { ProfileService } from '../../users/profiles.js';
import { body, param, requesterOf, required, VERSIONS } from './fields.js';

export function profileRoutes(deps: { profiles: ProfileService }): RouteDef[] {
  const { profiles } = deps;
  const routes: RouteDef[] = [
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/profile/:userId',
      auth: 'optional',
      handler: async (req) => ({ body: await profiles.getProfile(param(req, 'userId')) }),
    },
  ];
  for (const field of ['displayname', 'avatar_url'] as const) {
    routes.push(
      {
        method: 'GET',
        api: 'client',
        versions: VERSIONS,
        path: `/profile/:userId/${field}`,
        auth: 'optional',
        handler: async (req) => {
          const value = await profiles.getField(param(req, 'userId'), field);
          return { body: value === undefined ? {} : { [field]: value } };
        },
      },
      {
        method: 'PUT',
        api: 'client',
        versions: VERSIONS,
        path: `/profile/:userId/${field}`,
        // Guests may change their display name, nothing else of their profile.
        auth: field === 'displayname' ? 'guest' : 'user',
        handler: async (req) => {
          const requester = requesterOf(req);
          const value = required(body(req), field);
          const userId = param(req, 'userId');
          if (field === 'displayname') await profiles.setDisplayname(requester, userId, value);
          else await profiles.setAvatarUrl(requester, userId, value);
          return { body: {} };
        },
      },
    );
  }
  return routes;
}
