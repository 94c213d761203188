// GET /rooms/{roomId}/relations/{eventId}[/{relType}[/{eventType}]] and GET /rooms/{roomId}/threads
// (client v1): rooms/query/relations.ts.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { parseInclude } from '../../rooms/query/relations.js';
import type { RoomService } from '../../rooms/service.js';
import { param, query, queryInt, requester } from './fields.js';

/** As the reference server: 5 unless asked; up to 10,000 (all of a popular message's reactions). */
const DEFAULT_LIMIT = 5;
const MAX_RELATIONS = 10_000;
const MAX_THREADS = 100;

function dir(req: HttpRequest): 'b' | 'f' {
  const d = query(req, 'dir');
  if (d === undefined || d === 'b') return 'b';
  if (d === 'f') return 'f';
  throw HearthError.invalidParam("dir must be 'b' or 'f'");
}

function recurse(req: HttpRequest): boolean {
  const v = query(req, 'recurse') ?? query(req, 'org.matrix.msc3981.recurse');
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw HearthError.invalidParam("recurse must be 'true' or 'false'");
}

export function relationRoutes(deps: { rooms: RoomService }): RouteDef[] {
  const relations = async (req: HttpRequest) => {
    const from = query(req, 'from');
    const to = query(req, 'to');
    const relType = req.params['relType'];
    const eventType = req.params['eventType'];
    const request = {
      ...(relType !== undefined ? { relType } : {}),
      ...(eventType !== undefined ? { eventType } : {}),
      ...(from !== undefined && from !== '' ? { from } : {}),
      ...(to !== undefined && to !== '' ? { to } : {}),
      limit: queryInt(req, 'limit', DEFAULT_LIMIT, 1, MAX_RELATIONS),
      dir: dir(req),
      recurse: recurse(req),
    };
    return { body: await deps.rooms.relations(requester(req), param(req, 'roomId'), param(req, 'eventId'), request) };
  };
  return [
    ...['/rooms/:roomId/relations/:eventId', '/rooms/:roomId/relations/:eventId/:relType', '/rooms/:roomId/relations/:eventId/:relType/:eventType'].map(
      (path): RouteDef => ({ method: 'GET', api: 'client', versions: ['v1'], path, handler: relations }),
    ),
    {
      method: 'GET',
      api: 'client',
      versions: ['v1'],
      path: '/rooms/:roomId/threads',
      handler: async (req) => {
        const from = query(req, 'from');
        const request = {
          include: parseInclude(query(req, 'include')),
          limit: queryInt(req, 'limit', DEFAULT_LIMIT, 1, MAX_THREADS),
          ...(from !== undefined && from !== '' ? { from } : {}),
        };
        return { body: await deps.rooms.threads(requester(req), param(req, 'roomId'), request) };
      },
    },
  ];
}
