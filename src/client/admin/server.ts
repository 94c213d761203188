// GET /v1/server_version (admin API): the server's name and version, as admin tools print it.

import type { RouteDef } from '../../http/route.js';

export function serverVersionRoutes(deps: { version: string }): RouteDef[] {
  // Admin tools ask before anything else, so it needs no token (as in the reference server).
  return [{ method: 'GET', api: 'admin', versions: ['v1'], path: '/server_version', auth: 'none', handler: () => ({ body: { server_version: `Hearth ${deps.version}` } }) }];
}
