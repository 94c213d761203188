// The admin API's shared-secret registration: GET /_ext/admin/v1/register gives a nonce; POST
// registers an account when its `mac` proves knowledge of `registration_shared_secret`.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import type { AccountService } from '../../users/accounts.js';
import { jsonBody, optionalBoolean, optionalString, requiredString } from './fields.js';

const MAX_FIELD_LENGTH = 512;

function boundedString(body: JsonObject, key: string): string {
  const v = requiredString(body, key);
  if (v.length > MAX_FIELD_LENGTH || v.includes('\u0000')) throw HearthError.invalidParam(`Invalid ${key}`);
  return v;
}

export function sharedSecretRegisterRoutes(deps: { accounts: AccountService }): RouteDef[] {
  const { accounts } = deps;
  return [
    {
      method: 'GET',
      api: 'admin',
      versions: ['v1'],
      path: '/register',
      auth: 'none',
      handler: () => ({ body: { nonce: accounts.sharedSecretNonce() } }),
    },
    {
      method: 'POST',
      api: 'admin',
      versions: ['v1'],
      path: '/register',
      auth: 'none',
      handler: async (req) => {
        accounts.assertSharedSecretEnabled();
        const body = jsonBody(req);
        const r = await accounts.sharedSecretRegister({
          nonce: requiredString(body, 'nonce'),
          username: boundedString(body, 'username'),
          password: boundedString(body, 'password'),
          admin: optionalBoolean(body, 'admin') ?? false,
          mac: requiredString(body, 'mac'),
          userType: optionalString(body, 'user_type'),
          displayname: optionalString(body, 'displayname'),
        });
        return { body: { access_token: r.accessToken, user_id: r.userId, home_server: r.homeServer, device_id: r.deviceId } };
      },
    },
  ];
}
