// POST /account/password and POST /account/deactivate, both behind user-interactive auth.

import type { RouteDef } from '../../http/route.js';
import type { AccountService } from '../../users/accounts.js';
import { jsonBody, optionalBoolean, optionalString, requiredString } from './fields.js';
import { withUia } from './uia-reply.js';

export function accountManagementRoutes(deps: { accounts: AccountService }): RouteDef[] {
  const { accounts } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/account/password',
      handler: (req) =>
        withUia(async () => {
          const body = jsonBody(req);
          await accounts.changePassword(req.requester!, {
            newPassword: requiredString(body, 'new_password'),
            logoutDevices: optionalBoolean(body, 'logout_devices') ?? true,
            auth: body['auth'],
          });
          return { body: {} };
        }),
    },
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/account/deactivate',
      handler: (req) =>
        withUia(async () => {
          const body = jsonBody(req);
          optionalString(body, 'id_server');
          await accounts.deactivateAccount(req.requester!, {
            erase: optionalBoolean(body, 'erase') ?? false,
            auth: body['auth'],
          });
          // No third-party identifiers are bound here, so there is nothing left bound anywhere.
          return { body: { id_server_unbind_result: 'success' } };
        }),
    },
  ];
}
