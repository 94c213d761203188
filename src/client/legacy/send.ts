// POST /rooms/{roomId}/send/{eventType}: the legacy send without a transaction id. Each call sends
// a new event. It counts against the same rate limit as the send with a transaction id, and like
// it may carry NUL in the message's text (kept only as the event's JSON).

import type { RouteDef } from '../../http/route.js';
import type { RoomService } from '../../rooms/service.js';
import { body, param, requester } from '../rooms/fields.js';

export function legacySendRoutes(deps: { rooms: RoomService }): RouteDef[] {
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/send/:eventType',
      auth: 'guest',
      rateLimit: 'message',
      allowNulInBodyStrings: true,
      handler: async (req) => {
        const eventId = await deps.rooms.sendMessage(requester(req), param(req, 'roomId'), param(req, 'eventType'), body(req));
        return { body: { event_id: eventId } };
      },
    },
  ];
}
