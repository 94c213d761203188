// Events served to other servers: by id, the state at an event, auth chains, backfill and missing
// events. The room server decides what the origin may see (rooms/query/for-servers.ts); these
// routes read the parameters and wrap the answers as the server-server API shapes them.

import type { HttpRequest, RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/json.js';
import type { RoomService } from '../rooms/service.js';

export interface EventRoutesDeps {
  readonly serverName: string;
  readonly rooms: Pick<
    RoomService,
    'eventForServer' | 'stateForServer' | 'stateIdsForServer' | 'eventAuthForServer' | 'backfillForServer' | 'missingEventsForServer'
  >;
  readonly now?: () => number;
}

function required(req: HttpRequest, name: string): string {
  const value = req.query[name];
  if (value === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing ${name}`);
  if (typeof value !== 'string' || value === '') throw HearthError.invalidParam(`${name} must be given once`);
  return value;
}

function stringList(value: unknown, name: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw HearthError.badJson(`${name} must be a list of event ids`);
  return value;
}

function optionalInteger(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw HearthError.invalidParam(`${name} must be a non-negative integer`);
  return n;
}

export function federationEventRoutes(deps: EventRoutesDeps): RouteDef[] {
  const now = deps.now ?? Date.now;
  const { rooms } = deps;
  const route = (method: 'GET' | 'POST', path: string, handler: RouteDef['handler']): RouteDef => ({
    method,
    api: 'federation',
    versions: ['v1'],
    path,
    auth: 'server',
    handler,
  });
  return [
    route('GET', '/event/:eventId', async (req) => ({
      body: { origin: deps.serverName, origin_server_ts: now(), pdus: [await rooms.eventForServer(req.origin!, req.params['eventId']!)] },
    })),
    route('GET', '/state/:roomId', async (req) => ({
      body: await rooms.stateForServer(req.origin!, req.params['roomId']!, required(req, 'event_id')),
    })),
    route('GET', '/state_ids/:roomId', async (req) => ({
      body: await rooms.stateIdsForServer(req.origin!, req.params['roomId']!, required(req, 'event_id')),
    })),
    route('GET', '/event_auth/:roomId/:eventId', async (req) => ({
      body: await rooms.eventAuthForServer(req.origin!, req.params['roomId']!, req.params['eventId']!),
    })),
    route('GET', '/backfill/:roomId', async (req) => {
      const v = req.query['v'];
      if (v === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing v');
      const from = typeof v === 'string' ? [v] : v;
      const limit = optionalInteger(req.query['limit'], 'limit');
      if (limit === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing limit');
      return { body: await rooms.backfillForServer(req.origin!, req.params['roomId']!, from, limit) };
    }),
    route('POST', '/get_missing_events/:roomId', async (req) => {
      const body = req.body;
      if (!isJsonObject(body)) throw HearthError.badJson('The body must be a JSON object');
      const limit = optionalInteger(body['limit'], 'limit');
      const minDepth = optionalInteger(body['min_depth'], 'min_depth');
      return {
        body: await rooms.missingEventsForServer(req.origin!, req.params['roomId']!, {
          earliest_events: stringList(body['earliest_events'], 'earliest_events'),
          latest_events: stringList(body['latest_events'], 'latest_events'),
          ...(limit !== undefined ? { limit } : {}),
          ...(minDepth !== undefined ? { min_depth: minDepth } : {}),
        }),
      };
    }),
  ];
}
