// Endpoints clients (Element, matrix-js-sdk) call at start-up for features this server does not
// offer: third-party identifiers and TURN. Each answers as
// Synapse does when the feature is not configured, so clients carry on rather than report an error.

import type { HttpResponse, RouteDef } from '../../http/route.js';

function get(path: string, answer: () => HttpResponse): RouteDef {
  return { method: 'GET', api: 'client', versions: ['r0', 'v3'], path, auth: 'user', handler: answer };
}

export function stubRoutes(): RouteDef[] {
  return [
    get('/account/3pid', () => ({ body: { threepids: [] } })),
    // No TURN servers configured: an empty object, which clients read as "none".
    get('/voip/turnServer', () => ({ body: {} })),
  ];
}
