// POST/GET /register, GET /register/available and the registration-token validity check.

import { APP_SERVICE_LOGIN_TYPE as APP_SERVICE_TYPE, checkServiceClaim, requestingService } from '../../appservice/claims.js';
import type { AppServices } from '../../appservice/namespaces.js';
import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import type { AccountService } from '../../users/accounts.js';
import { jsonBody, optionalBoolean, optionalString, queryParam, requiredQueryParam } from './fields.js';
import { withUia } from './uia-reply.js';

function registerKind(req: HttpRequest): 'user' | 'guest' {
  const kind = queryParam(req, 'kind') ?? 'user';
  if (kind !== 'user' && kind !== 'guest') throw HearthError.invalidParam(`Invalid kind: ${kind}`);
  return kind;
}

/**
 * The guest a `user` registration upgrades (spec: guest access): the one whose token is in the
 * body's `guest_access_token` (which must be a guest's), or a guest whose token is in the
 * Authorization header and whose localpart is the requested username. Other header tokens are
 * ignored, as the route needs none.
 */
async function upgradingGuest(accounts: AccountService, req: HttpRequest, body: JsonObject): Promise<string | undefined> {
  const resolve = async (token: string) => {
    try {
      return await accounts.authenticate(token, req);
    } catch (err) {
      if (err instanceof HearthError) return undefined;
      throw err;
    }
  };
  const bodyToken = optionalString(body, 'guest_access_token');
  if (bodyToken !== undefined) {
    const guest = await resolve(bodyToken);
    if (!guest?.isGuest) throw HearthError.forbidden('guest_access_token is not the access token of a guest');
    return guest.userId;
  }
  const username = optionalString(body, 'username');
  if (req.accessToken === undefined || username === undefined) return undefined;
  const guest = await resolve(req.accessToken);
  return guest?.isGuest && guest.userId === `@${username.toLowerCase()}:${accounts.serverName}` ? guest.userId : undefined;
}

export function registerRoutes(deps: { accounts: AccountService; appServices?: AppServices }): RouteDef[] {
  const { accounts, appServices } = deps;
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/register',
      auth: 'none',
      handler: async () => ({
        body: { flows: (await accounts.registrationFlows()).map((stages) => ({ stages })), params: {} },
      }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/register',
      auth: 'none',
      rateLimit: 'registration',
      handler: (req) =>
        withUia(async () => {
          const kind = registerKind(req);
          const body = jsonBody(req);
          const initialDeviceDisplayName = optionalString(body, 'initial_device_display_name');
          if (kind === 'user' && body['type'] === APP_SERVICE_TYPE) {
            const service = requestingService(appServices, req.accessToken);
            const username = optionalString(body, 'username')?.toLowerCase();
            if (username === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing parameter: username');
            checkServiceClaim(appServices!, service, `@${username}:${accounts.serverName}`);
            const r = await accounts.registerForAppService(service.id, username, {
              deviceId: optionalString(body, 'device_id'),
              initialDeviceDisplayName,
              inhibitLogin: optionalBoolean(body, 'inhibit_login') ?? false,
            });
            return { body: { user_id: r.userId, home_server: accounts.serverName, ...(r.accessToken !== undefined ? { access_token: r.accessToken, device_id: r.deviceId } : {}) } };
          }
          if (kind === 'guest') {
            const r = await accounts.register({ kind, initialDeviceDisplayName });
            return { body: { user_id: r.userId, home_server: accounts.serverName, access_token: r.accessToken, device_id: r.deviceId } };
          }
          const guestUserId = await upgradingGuest(accounts, req, body);
          const r = await accounts.register({
            kind,
            ...(guestUserId !== undefined ? { guestUserId } : {}),
            auth: body['auth'],
            username: optionalString(body, 'username'),
            password: optionalString(body, 'password'),
            deviceId: optionalString(body, 'device_id'),
            initialDeviceDisplayName,
            inhibitLogin: optionalBoolean(body, 'inhibit_login'),
            refreshToken: optionalBoolean(body, 'refresh_token'),
          });
          const reply: Record<string, string> = { user_id: r.userId, home_server: accounts.serverName };
          if (r.accessToken !== undefined && r.deviceId !== undefined) {
            reply['access_token'] = r.accessToken;
            reply['device_id'] = r.deviceId;
          }
          return { body: reply };
        }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/register/available',
      auth: 'none',
      handler: async (req) => {
        await accounts.checkUsernameAvailable(requiredQueryParam(req, 'username'));
        return { body: { available: true } };
      },
    },
    ...(['GET', 'POST'] as const).map(
      (method): RouteDef => ({
        method,
        api: 'client',
        versions: ['v1'],
        path: '/register/m.login.registration_token/validity',
        auth: 'none',
        rateLimit: 'registration_token_validity',
        body: 'none',
        handler: async (req) => ({ body: { valid: await accounts.registrationTokenValid(requiredQueryParam(req, 'token')) } }),
      }),
    ),
  ];
}
