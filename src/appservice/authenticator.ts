// Access tokens of application services (application service API, "Identity assertion"). A
// request carrying a service's as_token acts as the service's sender user, or as the user named
// by `user_id` when that user is the service's (its sender or in its user namespaces) and exists;
// with `device_id` (or MSC3202's `org.matrix.msc3202.device_id`) as one of that user's devices.
// Any other token goes to the accounts' own check.

import { HearthError } from '../protocol/errors.js';
import type { Authenticator, RequestOrigin, Requester } from '../users/requester.js';

/** What the check needs of a registered service. */
export interface TokenHolder {
  readonly id: string;
  /** `@sender_localpart:server`. */
  readonly senderUserId: string;
  /** Whether the service may act as `userId`: its sender, or a user of its user namespaces. */
  claimsUser(userId: string): boolean;
}

export interface AppServiceAuthDeps {
  /** The service whose as_token this is. */
  byAsToken(token: string): TokenHolder | undefined;
  /** The account's admin flag, or undefined when there is no such (active) account. */
  account(userId: string): Promise<{ readonly isAdmin: boolean } | undefined>;
  deviceExists(userId: string, deviceId: string): Promise<boolean>;
}

const DEVICE_PARAMS = ['org.matrix.msc3202.device_id', 'device_id'] as const;

function queryString(origin: RequestOrigin, name: string): string | undefined {
  const value = origin.query?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `accounts` behind a check of application services' tokens. */
export function appServiceAuthenticator(deps: AppServiceAuthDeps, accounts: Authenticator): Authenticator {
  return async (accessToken, origin) => {
    const service = deps.byAsToken(accessToken);
    if (service === undefined) return accounts(accessToken, origin);
    const asked = queryString(origin, 'user_id');
    const userId = asked ?? service.senderUserId;
    if (!service.claimsUser(userId)) throw HearthError.forbidden('Application service cannot masquerade as this user');
    const account = await deps.account(userId);
    if (account === undefined) throw HearthError.forbidden('Application service has not registered this user');
    let deviceId: string | null = null;
    for (const name of DEVICE_PARAMS) {
      const given = queryString(origin, name);
      if (given === undefined) continue;
      // As the reference server answers a device the service has not made.
      if (!(await deps.deviceExists(userId, given))) throw new HearthError(400, 'M_FORBIDDEN', 'Application service trying to use a device that does not exist');
      deviceId = given;
      break;
    }
    const requester: Requester = { userId, deviceId, isGuest: false, isAdmin: account.isAdmin, appserviceId: service.id };
    return requester;
  };
}
