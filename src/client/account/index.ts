// The account routes: registration, login and logout, password and deactivation, devices, the
// admin API's shared-secret registration, and the answers for features this server does not offer.

import type { AppServices } from '../../appservice/namespaces.js';
import type { RouteDef } from '../../http/route.js';
import type { AccountService } from '../../users/accounts.js';
import { accountManagementRoutes } from './account-management.js';
import { deviceRoutes } from './devices.js';
import { loginRoutes } from './login.js';
import { registerRoutes } from './register.js';
import { sharedSecretRegisterRoutes } from './shared-secret-register.js';
import { stubRoutes } from './stubs.js';

export function accountRoutes(deps: { accounts: AccountService; appServices?: AppServices }): RouteDef[] {
  return [
    ...registerRoutes(deps),
    ...loginRoutes(deps),
    ...accountManagementRoutes(deps),
    ...deviceRoutes(deps),
    ...sharedSecretRegisterRoutes(deps),
    ...stubRoutes(),
  ];
}
