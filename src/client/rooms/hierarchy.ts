// GET /rooms/{roomId}/hierarchy (client v1, and MSC2946's unstable path older clients call):
// rooms/query/hierarchy.ts.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { RoomService } from '../../rooms/service.js';
import { param, query, queryInt, requester } from './fields.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;
/** Deeper than any real space; bounds the walk's queue. */
const MAX_DEPTH = 100;

function suggestedOnly(req: HttpRequest): boolean {
  const v = query(req, 'suggested_only');
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw HearthError.invalidParam("suggested_only must be 'true' or 'false'");
}

export function hierarchyRoutes(deps: { rooms: RoomService }): RouteDef[] {
  const handler = async (req: HttpRequest) => {
    const limit = queryInt(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
    const maxDepth = queryInt(req, 'max_depth', MAX_DEPTH, 0, MAX_DEPTH);
    const from = query(req, 'from');
    const request = { suggestedOnly: suggestedOnly(req), limit, maxDepth, ...(from !== undefined && from !== '' ? { from } : {}) };
    return { body: await deps.rooms.hierarchy(requester(req), param(req, 'roomId'), request) };
  };
  return [
    { method: 'GET', api: 'client', versions: ['v1'], path: '/rooms/:roomId/hierarchy', handler },
    { method: 'GET', api: 'client', versions: ['unstable'], path: '/org.matrix.msc2946/rooms/:roomId/hierarchy', handler },
  ];
}
