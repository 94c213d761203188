// GET/POST /login, POST /logout, POST /logout/all and GET /account/whoami.

import { APP_SERVICE_LOGIN_TYPE as APP_SERVICE_TYPE, checkServiceClaim, requestingService } from '../../appservice/claims.js';
import type { AppServices } from '../../appservice/namespaces.js';
import type { RouteDef } from '../../http/route.js';
import type { JsonObject } from '../../protocol/json.js';
import { identifiedUser } from '../../users/identifiers.js';
import type { AccountService } from '../../users/accounts.js';
import { jsonBody, optionalString, requiredString } from './fields.js';

export function loginRoutes(deps: { accounts: AccountService; appServices?: AppServices }): RouteDef[] {
  const { accounts, appServices } = deps;
  // The service's token names the service; the identifier, which of its users logs in.
  const loginAsService = async (body: JsonObject, accessToken: string | undefined) => {
    const service = requestingService(appServices, accessToken);
    const named = identifiedUser(body);
    const userId = named.startsWith('@') ? named : `@${named.toLowerCase()}:${accounts.serverName}`;
    checkServiceClaim(appServices!, service, userId);
    return accounts.loginForAppService(userId, {
      deviceId: optionalString(body, 'device_id'),
      initialDeviceDisplayName: optionalString(body, 'initial_device_display_name'),
    });
  };
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/login',
      auth: 'none',
      handler: () => ({ body: { flows: [...accounts.loginFlows(), ...(appServices !== undefined && appServices.size > 0 ? [{ type: APP_SERVICE_TYPE }] : [])] } }),
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
        const type = requiredString(body, 'type');
        const r =
          type === APP_SERVICE_TYPE
            ? await loginAsService(body, req.accessToken)
            : await accounts.login({
                type,
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
