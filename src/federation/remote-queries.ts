// Questions about other servers' users and aliases, asked of those servers: a profile
// (/query/profile) and a room alias (/query/directory). A server that does not know the user or
// alias answers 404, passed on as such; one that cannot be asked is a 502 that names the server and
// nothing more of what failed.

import { HearthError } from '../protocol/errors.js';
import { serverNameOf } from '../protocol/ids/accessors.js';
import { parseRoomAlias } from '../protocol/ids/room-ids.js';
import { parseUserId } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonValue } from '../protocol/json.js';
import type { FederationRequest, FederationResponse } from './client.js';

type Client = { request(req: FederationRequest): Promise<FederationResponse> };

/** A person waits on these: a peer slower than this is treated as unreachable. */
const QUERY_TIMEOUT_MS = 10_000;

async function ask(client: Client, destination: string, path: string, query: Record<string, string>, what: string): Promise<JsonValue | undefined> {
  let res: FederationResponse;
  try {
    res = await client.request({ destination, method: 'GET', path, query, timeoutMs: QUERY_TIMEOUT_MS });
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
