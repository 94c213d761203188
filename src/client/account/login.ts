// GET/POST /login, POST /logout, POST /logout/all and GET /account/whoami.

import type { RouteDef } from '../../http/route.js';
import type { AccountService } from '../../users/accounts.js';
import { jsonBody, optionalString, requiredString } from './fields.js';

export function loginRoutes(deps: { accounts: AccountService }): RouteDef[] {
  const { accounts } = deps;
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/login',
      auth: 'none',
      handler: () => ({ body: { flows: accounts.loginFlows() } }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/login',
      auth: 'none',
      rateLimit: 'login',
      handler: async (req) => {
        const body = jsonBody(req);
        const r = await accounts.login({
          type: requiredString(body, 'type'),
          identifier: body,
          password: optionalString(body, 'password'),
          deviceId: optionalString(body, 'device_id'),
          initialDeviceDisplayName: optionalString(body, 'initial_device_display_name'),
        });
        return {
          body: {
            user_id: r.userId,
            access_token: r.accessToken,
            device_id: r.deviceId,
            home_server: r.homeServer,
            ...(r.wellKnown ? { well_known: r.wellKnown } : {}),
          },
        };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/logout',
      auth: 'guest',
      body: 'none',
      handler: async (req) => {
        await accounts.logout(req.requester!);
        return { body: {} };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/logout/all',
      auth: 'guest',
      body: 'none',
      handler: async (req) => {
        await accounts.logoutAll(req.requester!.userId);
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/account/whoami',
      auth: 'guest',
      handler: (req) => {
        const r = req.requester!;
        return { body: { user_id: r.userId, ...(r.deviceId !== null ? { device_id: r.deviceId } : {}), is_guest: r.isGuest } };
      },
    },
  ];
}
