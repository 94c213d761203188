// GET /events (the legacy event stream, with the deprecated `room_id` peeking form) and
// GET /events/{eventId}, both deprecated since r0 and still called by bridges and tools.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { DEFAULT_EVENT_STREAM_LIMIT, type EventStreamService } from '../../sync/event-stream.js';
import { param, query, queryInt, requester } from '../rooms/fields.js';

const VERSIONS = ['r0', 'v3'];
/** Synapse's wait when the client names none: a client of this API expects a long-poll. */
export const DEFAULT_EVENTS_TIMEOUT_MS = 30_000;
const MAX_LIMIT = 1000;

function timeoutParam(req: HttpRequest): number {
  const v = query(req, 'timeout');
  if (v === undefined || v === '') return DEFAULT_EVENTS_TIMEOUT_MS;
  if (!/^\d{1,15}$/.test(v)) throw HearthError.invalidParam("'timeout' must be a non-negative integer (milliseconds)");
  return Number(v);
}

export function legacyEventRoutes(deps: { eventStream: EventStreamService }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/events',
      auth: 'guest',
      handler: async (req) => {
        const who = requester(req);
        const roomId = query(req, 'room_id');
        if (who.isGuest && (roomId === undefined || roomId === '')) throw new HearthError(400, 'M_MISSING_PARAM', 'Guest users must specify room_id param');
        const from = query(req, 'from');
        const timeoutMs = timeoutParam(req);
        // 0 is Synapse's "no limit given".
        const limit = queryInt(req, 'limit', DEFAULT_EVENT_STREAM_LIMIT, 0, MAX_LIMIT) || DEFAULT_EVENT_STREAM_LIMIT;
        const body = await deps.eventStream.stream({
          userId: who.userId,
          deviceId: who.deviceId,
          isGuest: who.isGuest,
          ...(from !== undefined && from !== '' ? { from } : {}),
          ...(roomId !== undefined && roomId !== '' ? { roomId } : {}),
          timeoutMs,
          limit,
          ...(timeoutMs > 0 && req.onClientGone !== undefined ? { onClientGone: (listener: () => void) => req.onClientGone!(listener) } : {}),
        });
        return { body };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/events/:eventId',
      handler: async (req) => ({ body: await deps.eventStream.event(requester(req), param(req, 'eventId')) }),
    },
  ];
}
