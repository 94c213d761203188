// The admin API's background updates: Hearth's migrations run at start, none in the background,
// so the status is always empty; the enabled flag is kept only to be echoed.

import type { RouteDef } from '../../http/route.js';
import { body, optionalBoolean } from '../rooms/fields.js';
import { HearthError } from '../../protocol/errors.js';

export function backgroundUpdateRoutes(): RouteDef[] {
  let enabled = true;
  return [
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/background_updates/status', handler: () => ({ body: { enabled, current_updates: {} } }) },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/background_updates/enabled', handler: () => ({ body: { enabled } }) },
    {
      method: 'POST',
      api: 'admin',
      versions: ['v1'],
      path: '/background_updates/enabled',
      handler: (req) => {
        const flag = optionalBoolean(body(req), 'enabled');
        if (flag === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing parameter: enabled');
        enabled = flag;
        return { body: { enabled } };
      },
    },
  ];
}
