// POST /user/{userId}/openid/request_token (client API, "OpenID"): a token proving who the user is
// to a third party, which checks it through the federation API (federation/openid.ts).

import type { RouteDef } from '../../http/route.js';
import type { OpenIdService } from '../../users/openid.js';
import { param, requester } from '../rooms/fields.js';

export function openIdRoutes(deps: { openId: OpenIdService }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/user/:userId/openid/request_token',
      // The body must be a JSON object (read by the HTTP layer); its contents are not used.
      handler: async (req) => ({ body: await deps.openId.requestToken(requester(req).userId, param(req, 'userId')) }),
    },
  ];
}
