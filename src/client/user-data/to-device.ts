// PUT /sendToDevice/{eventType}/{txnId}.

import type { RouteDef } from '../../http/route.js';
import type { ToDeviceService } from '../../users/to-device.js';
import { body, param, requesterOf, required, VERSIONS } from './fields.js';

export function toDeviceRoutes(deps: { toDevice: ToDeviceService }): RouteDef[] {
  const { toDevice } = deps;
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/sendToDevice/:eventType/:txnId',
      auth: 'guest',
      handler: async (req) => {
        const requester = requesterOf(req);
        const messages = required(body(req), 'messages');
        await toDevice.send(requester, param(req, 'eventType'), param(req, 'txnId'), messages);
        return { body: {} };
      },
    },
  ];
}
