// The admin API's registration tokens: GET /v1/registration_tokens, GET/PUT/DELETE
// /v1/registration_tokens/{token}, POST /v1/registration_tokens/new.

import type { RouteDef } from '../../http/route.js';
import type { AdminRegistrationTokens } from '../../admin/registration-tokens.js';
import { body, param } from '../rooms/fields.js';
import { queryBool } from './query.js';

export function registrationTokenRoutes(deps: { tokens: AdminRegistrationTokens }): RouteDef[] {
  const { tokens } = deps;
  const route = (method: RouteDef['method'], path: string, handler: RouteDef['handler']): RouteDef => ({ method, api: 'admin', versions: ['v1'], path, handler });
  return [
    route('GET', '/registration_tokens', async (req) => ({ body: await tokens.list(queryBool(req, 'valid')) })),
    route('POST', '/registration_tokens/new', async (req) => ({ body: await tokens.create(body(req)) })),
    route('GET', '/registration_tokens/:token', async (req) => ({ body: await tokens.get(param(req, 'token')) })),
    route('PUT', '/registration_tokens/:token', async (req) => ({ body: await tokens.update(param(req, 'token'), body(req)) })),
    route('DELETE', '/registration_tokens/:token', async (req) => {
      await tokens.delete(param(req, 'token'));
      return { body: {} };
    }),
  ];
}
