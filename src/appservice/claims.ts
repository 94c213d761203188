// What an application service may do in its own name: the service behind a request's as_token,
// and the users it may register or log in as (application service API, "Server admin style
// permissions" and the `m.login.application_service` type of /register and /login).

import { HearthError } from '../protocol/errors.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';

/** The /register and /login type of application services: their as_token, for a user of theirs. */
export const APP_SERVICE_LOGIN_TYPE = 'm.login.application_service';

/** The service whose as_token the request carries; 401 otherwise. */
export function requestingService(services: AppServices | undefined, accessToken: string | undefined): AppServiceRegistration {
  if (accessToken === undefined) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
  const service = services?.byAsToken(accessToken);
  if (service === undefined) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
  return service;
}

/**
 * 400 M_EXCLUSIVE unless `service` may take `userId`: its own user or one of its user namespaces,
 * and not claimed exclusively by another service.
 */
export function checkServiceClaim(services: AppServices, service: AppServiceRegistration, userId: string): void {
  if (!services.isSenderOrInUserNamespace(service, userId)) {
    throw new HearthError(400, 'M_EXCLUSIVE', 'This user ID is not in the namespaces of the application service');
  }
  const owner = services.exclusiveOwnerOfUser(userId);
  if (owner !== undefined && owner.id !== service.id) throw new HearthError(400, 'M_EXCLUSIVE', 'This user ID is reserved by another application service');
}

/** 400 M_EXCLUSIVE when an application service claims `userId` for itself (for everyone else's registrations). */
export function checkNotExclusive(services: AppServices, userId: string): void {
  if (services.exclusiveOwnerOfUser(userId) !== undefined) throw new HearthError(400, 'M_EXCLUSIVE', 'This user ID is reserved by an application service');
}

/** 400 M_EXCLUSIVE when another than `appserviceId` (the requester's service, if any) claims the alias for itself. */
export function checkAliasClaim(services: AppServices | undefined, appserviceId: string | undefined, alias: string): void {
  const owner = services?.exclusiveOwnerOfAlias(alias);
  if (owner !== undefined && owner.id !== appserviceId) throw new HearthError(400, 'M_EXCLUSIVE', 'This room alias is reserved by an application service');
}
