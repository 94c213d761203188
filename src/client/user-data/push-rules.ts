// GET /pushrules/: the user's push rules. Clients (matrix-js-sdk among them) read them before their
// first sync and do not start without them. Until rules can be changed, they are the defaults.

import type { RouteDef } from '../../http/route.js';
import { defaultPushRules } from '../../protocol/push-rules/index.js';
import { requesterOf, VERSIONS } from './fields.js';

export function pushRuleRoutes(): RouteDef[] {
  return ['/pushrules/', '/pushrules'].map(
    (path): RouteDef => ({
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path,
      handler: (req) => ({ body: { global: defaultPushRules(requesterOf(req).userId) } }),
    }),
  );
}
