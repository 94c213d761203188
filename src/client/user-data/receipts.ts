// POST /rooms/{roomId}/receipt/{receiptType}/{eventId} and POST /rooms/{roomId}/read_markers.

import type { RouteDef } from '../../http/route.js';
import type { ReceiptService } from '../../users/receipts.js';
import { body, optionalString, param, requesterOf, VERSIONS } from './fields.js';

export function receiptRoutes(deps: { receipts: ReceiptService }): RouteDef[] {
  const { receipts } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/receipt/:receiptType/:eventId',
      handler: async (req) => {
        await receipts.sendReceipt(
          requesterOf(req).userId,
          param(req, 'roomId'),
          param(req, 'receiptType'),
          param(req, 'eventId'),
          body(req)['thread_id'],
        );
        return { body: {} };
      },
    },
    {
      method: 'POST',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/read_markers',
      handler: async (req) => {
        const b = body(req);
        const fullyRead = optionalString(b, 'm.fully_read');
        const read = optionalString(b, 'm.read');
        const readPrivate = optionalString(b, 'm.read.private');
        await receipts.setReadMarkers(requesterOf(req).userId, param(req, 'roomId'), {
          ...(fullyRead !== undefined ? { fullyRead } : {}),
          ...(read !== undefined ? { read } : {}),
          ...(readPrivate !== undefined ? { readPrivate } : {}),
        });
        return { body: {} };
      },
    },
  ];
}
