// GET /admin/whois/{userId} (client API, "Server administration"), also under the admin API's
// /v1/whois/{userId}: the user's devices and where they were last seen from.

import type { RouteDef } from '../../http/route.js';
import type { WhoisService } from '../../users/whois.js';
import { param, requester } from '../rooms/fields.js';

export function whoisRoutes(deps: { whois: WhoisService }): RouteDef[] {
  const handler: RouteDef['handler'] = async (req) => {
    const who = requester(req);
    return { body: await deps.whois.whois({ userId: who.userId, isAdmin: who.isAdmin }, param(req, 'userId')) };
  };
  return [
    { method: 'GET', api: 'client', versions: ['r0', 'v3'], path: '/admin/whois/:userId', handler },
    // Any user may ask about themself: the service checks admin rights for others.
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/whois/:userId', auth: 'user', handler },
  ];
}
