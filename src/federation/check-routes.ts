// GET /_ext/admin/v1/federation/check/{serverName} (and under /_synapse/admin): the federation
// check of `hearth federation-check`, as JSON, for server admins. The answer is 200 with the report
// whatever it says; `ok` tells whether federation with that server would work.

import type { RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { type FederationCheckDeps, federationCheck } from './check.js';

/** `deps`: the naming, DNS, trusted CAs and TLS setting the server's federation client uses. */
export function federationCheckRoutes(deps: FederationCheckDeps): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'admin',
      versions: ['v1'],
      path: '/federation/check/:serverName',
      handler: async (req) => {
        const serverName = req.params['serverName'];
        if (serverName === undefined || serverName === '') throw HearthError.invalidParam('Missing path parameter serverName');
        return { body: await federationCheck(serverName, deps) };
      },
    },
  ];
}
