// GET /thirdparty/protocols, /thirdparty/protocol/{protocol}, /thirdparty/{user|location}/{protocol}
// and the reverse lookups /thirdparty/user?userid= and /thirdparty/location?alias=: answered by
// the application services that bridge the protocols (appservice/third-party.ts). The query
// parameters, but the access token, are the protocol's fields, passed on as given.

import type { ThirdPartyKind, ThirdPartyLookups } from '../../appservice/third-party.js';
import type { HttpRequest, RouteDef } from '../../http/route.js';

function fieldsOf(req: HttpRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.query)) {
    if (key === 'access_token' || value === undefined) continue;
    // A field given twice: the first, as Synapse takes it.
    out[key] = Array.isArray(value) ? value[0]! : value;
  }
  return out;
}

export function thirdPartyRoutes(deps: { lookups: ThirdPartyLookups }): RouteDef[] {
  const get = (path: string, handler: RouteDef['handler']): RouteDef => ({ method: 'GET', api: 'client', versions: ['r0', 'v3'], path, auth: 'user', handler });
  const byKind = (kind: ThirdPartyKind): RouteDef[] => [
    get(`/thirdparty/${kind}/:protocol`, async (req) => ({ body: await deps.lookups.query(kind, req.params['protocol'] ?? '', fieldsOf(req)) })),
    get(`/thirdparty/${kind}`, async (req) => ({ body: await deps.lookups.reverse(kind, fieldsOf(req)) })),
  ];
  return [
    get('/thirdparty/protocols', async () => ({ body: await deps.lookups.protocols() })),
    get('/thirdparty/protocol/:protocol', async (req) => ({ body: await deps.lookups.protocol(req.params['protocol'] ?? '') })),
    ...byKind('user'),
    ...byKind('location'),
  ];
}
