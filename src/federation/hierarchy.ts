// Space hierarchies across servers (server-server API, GET /hierarchy/{roomId}): the route other
// servers ask of this one (rooms/query/hierarchy.ts decides what they see), and the RemoteHierarchy
// port the room server asks other servers through, for rooms this one is not in. Answers are
// checked field by field (what does not fit is dropped) and kept five minutes, as the spec asks.

import type { RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonValue } from '../protocol/json.js';
import type { RoomService } from '../rooms/service.js';
import type { ChildState, RemoteHierarchy, RemoteSpace, RoomSummaryEntry } from '../rooms/query/summary.js';
import type { FederationRequest, FederationResponse } from './client.js';

export function federationHierarchyRoutes(deps: { rooms: Pick<RoomService, 'hierarchyForServer'> }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/hierarchy/:roomId',
      auth: 'server',
      handler: async (req) => {
        const suggested = req.query['suggested_only'];
        if (suggested !== undefined && suggested !== 'true' && suggested !== 'false') throw HearthError.invalidParam("suggested_only must be 'true' or 'false'");
        return { body: await deps.rooms.hierarchyForServer(req.origin!, req.params['roomId']!, suggested === 'true') };
      },
    },
  ];
}

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

const KEPT_MS = 5 * 60_000;
const MAX_KEPT = 1_000;
/** A person waits on these. */
const TIMEOUT_MS = 10_000;
const OPTIONAL_STRINGS = ['name', 'topic', 'canonical_alias', 'avatar_url', 'join_rule', 'room_type', 'encryption', 'room_version'] as const;

/** A room summary from another server, or undefined when it is not one. */
function summaryFrom(value: JsonValue | undefined): RoomSummaryEntry | undefined {
  if (!isJsonObject(value) || typeof value['room_id'] !== 'string' || !value['room_id'].startsWith('!')) return undefined;
  const members = value['num_joined_members'];
  const entry: RoomSummaryEntry = {
    room_id: value['room_id'],
    num_joined_members: typeof members === 'number' && Number.isSafeInteger(members) && members >= 0 ? members : 0,
    world_readable: value['world_readable'] === true,
    guest_can_join: value['guest_can_join'] === true,
  };
  for (const key of OPTIONAL_STRINGS) {
    const v = value[key];
    if (typeof v === 'string') entry[key] = v;
  }
  const allowed = value['allowed_room_ids'];
  if (Array.isArray(allowed)) {
    const ids = allowed.filter((id): id is string => typeof id === 'string' && id.startsWith('!'));
    if (ids.length > 0) entry.allowed_room_ids = ids;
  }
  return entry;
}

function childFrom(value: JsonValue): ChildState | undefined {
  if (!isJsonObject(value)) return undefined;
  const { type, state_key: key, content, sender, origin_server_ts: ts } = value;
  if (typeof type !== 'string' || typeof key !== 'string' || !isJsonObject(content) || typeof sender !== 'string' || typeof ts !== 'number') return undefined;
  return { type, state_key: key, content, sender, origin_server_ts: ts };
}

/** Asks other servers' /hierarchy over the federation client. */
export class FederationRemoteHierarchy implements RemoteHierarchy {
  private readonly kept = new Map<string, { readonly at: number; readonly space: RemoteSpace }>();

  constructor(
    private readonly client: Client,
    private readonly serverName: string,
    private readonly now: () => number = Date.now,
  ) {}

  async space(roomId: string, via: readonly string[], suggestedOnly: boolean): Promise<RemoteSpace | undefined> {
    const key = JSON.stringify([roomId, suggestedOnly]);
    const kept = this.kept.get(key);
    if (kept !== undefined && this.now() - kept.at < KEPT_MS) return kept.space;
    for (const server of via) {
      if (server === this.serverName) continue;
      const space = await this.ask(server, roomId, suggestedOnly);
      if (space === undefined) continue;
      if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value as string);
      this.kept.set(key, { at: this.now(), space });
      return space;
    }
    return undefined;
  }

  private async ask(server: string, roomId: string, suggestedOnly: boolean): Promise<RemoteSpace | undefined> {
    let res: FederationResponse;
    try {
      res = await this.client.request({
        destination: server,
        method: 'GET',
        path: `/federation/v1/hierarchy/${encodeURIComponent(roomId)}`,
        query: { suggested_only: suggestedOnly ? 'true' : 'false' },
        timeoutMs: TIMEOUT_MS,
      });
    } catch {
      return undefined;
    }
    if (res.status !== 200 || !isJsonObject(res.body)) return undefined;
    const room = summaryFrom(res.body['room']);
    if (room === undefined || room.room_id !== roomId) return undefined;
    const rawRoom = res.body['room'] as Record<string, JsonValue>;
    const childrenState = Array.isArray(rawRoom['children_state']) ? rawRoom['children_state'].flatMap((c) => childFrom(c) ?? []) : [];
    const children = Array.isArray(res.body['children']) ? res.body['children'].flatMap((c) => summaryFrom(c) ?? []) : [];
    return { room: { ...room, children_state: childrenState }, children };
  }
}
