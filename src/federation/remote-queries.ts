// Questions about other servers' users, aliases and rooms, asked of those servers: a profile
// (/query/profile), a room alias (/query/directory) and the public room directory (/publicRooms).
// A server that does not know the user or alias answers 404, passed on as such; one that cannot be
// asked is a 502 that names the server and nothing more of what failed.

import { HearthError } from '../protocol/errors.js';
import { serverNameOf } from '../protocol/ids/accessors.js';
import { parseRoomAlias } from '../protocol/ids/room-ids.js';
import { parseUserId } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { PublicRoomsChunkEntry } from '../rooms/perform/directory.js';
import type { FederationRequest, FederationResponse, QueryValue } from './client.js';

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

/** A person waits on these: a peer slower than this is treated as unreachable. */
const QUERY_TIMEOUT_MS = 10_000;

async function ask(
  client: Client,
  destination: string,
  path: string,
  query: Record<string, QueryValue | undefined>,
  what: string,
  body?: JsonObject,
): Promise<JsonValue | undefined> {
  let res: FederationResponse;
  try {
    const method = body === undefined ? 'GET' : 'POST';
    res = await client.request({ destination, method, path, query, ...(body !== undefined ? { body } : {}), timeoutMs: QUERY_TIMEOUT_MS });
  } catch {
    throw new HearthError(502, 'M_UNKNOWN', `Could not reach ${destination} for ${what}`);
  }
  if (res.status === 404) return undefined;
  if (res.status !== 200 || !isJsonObject(res.body)) throw new HearthError(502, 'M_UNKNOWN', `${destination} did not answer for ${what}`);
  return res.body;
}

/** Another server's user's profile; undefined when their server knows no such user. */
export async function remoteProfile(client: Client, userId: string): Promise<{ displayname: string | null; avatar_url: string | null } | undefined> {
  const user = parseUserId(userId);
  const body = await ask(client, serverNameOf(user), '/federation/v1/query/profile', { user_id: user }, 'the profile');
  if (!isJsonObject(body)) return undefined;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  return { displayname: text(body['displayname']), avatar_url: text(body['avatar_url']) };
}

/** The room another server's alias names, and servers to join it through; undefined when unknown there. */
export async function remoteAlias(client: Client, aliasText: string): Promise<{ room_id: string; servers: string[] } | undefined> {
  const alias = parseRoomAlias(aliasText);
  const server = serverNameOf(alias);
  const body = await ask(client, server, '/federation/v1/query/directory', { room_alias: alias }, 'the room alias');
  if (!isJsonObject(body) || typeof body['room_id'] !== 'string') return undefined;
  const servers = Array.isArray(body['servers']) ? body['servers'].filter((s): s is string => typeof s === 'string') : [];
  return { room_id: body['room_id'], servers: servers.length > 0 ? servers : [server] };
}

export interface RemotePublicRoomsRequest {
  readonly limit?: number;
  readonly since?: string;
  /** The client's filter (POST /publicRooms); with one, the other server is asked by POST too. */
  readonly filter?: { readonly generic_search_term?: string; readonly room_types?: readonly (string | null)[] };
  readonly includeAllNetworks?: boolean;
  readonly thirdPartyInstanceId?: string;
}

export interface RemotePublicRooms {
  chunk: PublicRoomsChunkEntry[];
  next_batch?: string;
  prev_batch?: string;
  total_room_count_estimate?: number;
}

/** Another server's public room directory, in the client API's shape. */
export async function remotePublicRooms(client: Client, server: string, req: RemotePublicRoomsRequest): Promise<RemotePublicRooms> {
  const what = 'the public room directory';
  const body =
    req.filter === undefined
      ? await ask(
          client,
          server,
          '/federation/v1/publicRooms',
          {
            limit: req.limit,
            since: req.since,
            include_all_networks: req.includeAllNetworks ?? false,
            third_party_instance_id: req.thirdPartyInstanceId,
          },
          what,
        )
      : await ask(client, server, '/federation/v1/publicRooms', {}, what, {
          ...(req.limit !== undefined ? { limit: req.limit } : {}),
          ...(req.since !== undefined ? { since: req.since } : {}),
          filter: {
            ...(req.filter.generic_search_term !== undefined ? { generic_search_term: req.filter.generic_search_term } : {}),
            ...(req.filter.room_types !== undefined ? { room_types: [...req.filter.room_types] } : {}),
          },
          include_all_networks: req.includeAllNetworks ?? false,
          ...(req.thirdPartyInstanceId !== undefined ? { third_party_instance_id: req.thirdPartyInstanceId } : {}),
        });
  // A 404 (no such API there) is no directory to show either.
  if (!isJsonObject(body) || !Array.isArray(body['chunk'])) throw new HearthError(502, 'M_UNKNOWN', `${server} did not answer for ${what}`);
  const out: RemotePublicRooms = { chunk: body['chunk'].flatMap((r) => publishedRoom(r)) };
  const { next_batch: next, prev_batch: prev, total_room_count_estimate: total } = body;
  if (typeof next === 'string' && next !== '') out.next_batch = next;
  if (typeof prev === 'string' && prev !== '') out.prev_batch = prev;
  if (typeof total === 'number' && Number.isSafeInteger(total) && total >= 0) out.total_room_count_estimate = total;
  return out;
}

/** One entry of another server's directory, the fields the client API names and of their types; none without a room ID. */
function publishedRoom(value: JsonValue): PublicRoomsChunkEntry[] {
  if (!isJsonObject(value) || typeof value['room_id'] !== 'string') return [];
  const members = value['num_joined_members'];
  const entry: PublicRoomsChunkEntry = {
    room_id: value['room_id'],
    num_joined_members: typeof members === 'number' && Number.isSafeInteger(members) && members >= 0 ? members : 0,
    world_readable: value['world_readable'] === true,
    guest_can_join: value['guest_can_join'] === true,
  };
  for (const key of ['join_rule', 'name', 'topic', 'canonical_alias', 'avatar_url', 'room_type'] as const) {
    const v = value[key];
    if (typeof v === 'string') entry[key] = v;
  }
  return [entry];
}
