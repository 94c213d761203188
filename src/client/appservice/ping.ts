// POST /_chat/client/v1/appservice/{appserviceId}/ping: an application service asks the server to
// ping it, to check that the two reach each other; only the service itself may (its as_token).

import type { AppServiceQueryClient } from '../../appservice/queries.js';
import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { jsonBody, optionalString } from '../account/fields.js';

export function appServiceRoutes(deps: { queries: Pick<AppServiceQueryClient, 'ping'> }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['v1'],
      path: '/appservice/:appserviceId/ping',
      handler: async (req) => {
        const id = req.params['appserviceId'] ?? '';
        if (req.requester?.appserviceId !== id) throw HearthError.forbidden('The access token is not that application service\'s');
        const transactionId = optionalString(jsonBody(req), 'transaction_id');
        return { body: await deps.queries.ping(id, transactionId) };
      },
    },
  ];
}
