// Sending and reading events: send with a transaction id, state PUT and GET (an empty state key
// with or without the trailing slash), the whole state, one event, an event's context, and
// /messages pagination.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { parseRoomEventFilterParam, type RoomEventFilter } from '../../protocol/filters.js';
import type { RoomService } from '../../rooms/service.js';
import { body, optionalString, param, query, queryInt, requester } from './fields.js';

const VERSIONS = ['r0', 'v3'];
const MAX_LIMIT = 1000;
/** Transaction ids are kept per device to make sends idempotent; a bound keeps those rows small. */
const MAX_TXN_ID_BYTES = 255;

function sendTxnId(req: HttpRequest): string {
  const txnId = param(req, 'txnId');
  if (Buffer.byteLength(txnId, 'utf8') > MAX_TXN_ID_BYTES) {
    throw HearthError.invalidParam(`The transaction ID is longer than ${MAX_TXN_ID_BYTES} bytes`);
  }
  return txnId;
}

function filterParam(req: HttpRequest): RoomEventFilter | undefined {
  const text = query(req, 'filter');
  return text === undefined || text === '' ? undefined : parseRoomEventFilterParam(text);
}

export function eventRoutes(deps: { rooms: RoomService }): RouteDef[] {
  const { rooms } = deps;
  const putState = (req: HttpRequest, stateKey: string) =>
    rooms.sendState(requester(req), param(req, 'roomId'), param(req, 'eventType'), stateKey, body(req)).then((eventId) => ({ body: { event_id: eventId } }));
  const getState = async (req: HttpRequest, stateKey: string) => {
    const format = query(req, 'format');
    if (format !== undefined && format !== 'content' && format !== 'event') throw HearthError.invalidParam('format must be "content" or "event"');
    return { body: await rooms.stateEvent(requester(req), param(req, 'roomId'), param(req, 'eventType'), stateKey, format ?? 'content') };
  };
  const state = (method: 'GET' | 'PUT', path: string, key: (req: HttpRequest) => string): RouteDef => ({
    method,
    api: 'client',
    versions: VERSIONS,
    path,
    ...(method === 'GET' ? { auth: 'guest' as const } : { rateLimit: 'message' as const }),
    handler: (req) => (method === 'GET' ? getState(req, key(req)) : putState(req, key(req))),
  });
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/send/:eventType/:txnId',
      auth: 'guest',
      rateLimit: 'message',
      // The content is kept only as the event's JSON: a message's text may hold NUL.
      allowNulInBodyStrings: true,
      handler: async (req) => {
        const eventId = await rooms.sendMessage(requester(req), param(req, 'roomId'), param(req, 'eventType'), body(req), sendTxnId(req));
        return { body: { event_id: eventId } };
      },
    },
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/redact/:eventId/:txnId',
      rateLimit: 'message',
      allowNulInBodyStrings: true,
      handler: async (req) => {
        const reason = optionalString(body(req), 'reason');
        const eventId = await rooms.redact(requester(req), param(req, 'roomId'), param(req, 'eventId'), {
          txnId: param(req, 'txnId'),
          ...(reason !== undefined ? { reason } : {}),
        });
        return { body: { event_id: eventId } };
      },
    },
    state('PUT', '/rooms/:roomId/state/:eventType/:stateKey', (req) => req.params['stateKey'] ?? ''),
    state('PUT', '/rooms/:roomId/state/:eventType/', () => ''),
    state('PUT', '/rooms/:roomId/state/:eventType', () => ''),
    state('GET', '/rooms/:roomId/state/:eventType/:stateKey', (req) => req.params['stateKey'] ?? ''),
    state('GET', '/rooms/:roomId/state/:eventType/', () => ''),
    state('GET', '/rooms/:roomId/state/:eventType', () => ''),
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/state',
      auth: 'guest',
      handler: async (req) => ({ body: await rooms.state(requester(req), param(req, 'roomId')) }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/event/:eventId',
      auth: 'guest',
      handler: async (req) => ({ body: await rooms.getEvent(requester(req), param(req, 'roomId'), param(req, 'eventId')) }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/context/:eventId',
      auth: 'guest',
      handler: async (req) => {
        const filter = filterParam(req);
        const limit = queryInt(req, 'limit', 10, 0, MAX_LIMIT);
        return {
          body: await rooms.context(requester(req), param(req, 'roomId'), param(req, 'eventId'), { limit, ...(filter !== undefined ? { filter } : {}) }),
        };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/messages',
      auth: 'guest',
      handler: async (req) => {
        // As the reference server reads them: `dir` defaults to forwards, and `from=END` is no `from`.
        const dir = query(req, 'dir') ?? 'f';
        if (dir !== 'b' && dir !== 'f') throw HearthError.invalidParam('dir must be "b" or "f"');
        const given = query(req, 'from');
        const from = given === 'END' ? undefined : given;
        const to = query(req, 'to');
        const filter = filterParam(req);
        const limit = queryInt(req, 'limit', filter?.limit ?? 10, 0, MAX_LIMIT);
        return {
          body: await rooms.messages(requester(req), param(req, 'roomId'), {
            dir,
            limit,
            ...(from !== undefined && from !== '' ? { from } : {}),
            ...(to !== undefined && to !== '' ? { to } : {}),
            ...(filter !== undefined ? { filter } : {}),
          }),
        };
      },
    },
  ];
}
