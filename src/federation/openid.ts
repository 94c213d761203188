// GET /_chat/federation/v1/openid/userinfo?access_token=...: whose an OpenID token is. Asked by
// third parties, not servers, so the request carries no signature (server-server API, "OpenID").

import type { RouteDef } from '../http/route.js';
import type { OpenIdService } from '../users/openid.js';

export function openIdUserInfoRoutes(deps: { openId: OpenIdService }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/openid/userinfo',
      auth: 'none',
      handler: async (req) => {
        const token = req.query['access_token'];
        return { body: await deps.openId.userInfo(typeof token === 'string' ? token : undefined) };
      },
    },
  ];
}
