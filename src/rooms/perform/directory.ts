// The published room directory: a room's visibility there, and the public list (GET and POST
// /publicRooms) with search and offset pagination (`p<offset>` tokens).

import { HearthError } from '../../protocol/errors.js';
import { publicRooms, roomById, setAppServiceListing, setRoomPublic, type DirectoryNetwork, type RoomRow } from '../../storage/rooms/rooms.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import { canManageRoomListing } from './aliases.js';

export type DirectoryVisibility = 'public' | 'private';

export async function directoryVisibility(core: RoomCore, roomId: string): Promise<DirectoryVisibility> {
  const row = await roomById(core.db, roomId);
  if (row === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  return row.is_public !== 0 ? 'public' : 'private';
}

export async function setDirectoryVisibility(core: RoomCore, actor: Actor, roomId: string, visibility: DirectoryVisibility): Promise<void> {
  const head = await core.head(roomId);
  if (actor.isAdmin !== true && !canManageRoomListing(head, actor.userId)) {
    throw HearthError.forbidden('You may not change whether this room is published');
  }
  await setRoomPublic(core.db, head.roomNid!, visibility === 'public');
}

/**
 * An application service publishes a room in (or takes it out of) its directory of a network
 * (PUT /directory/list/appservice/{networkId}/{roomId}); 404 for a room unknown here.
 */
export async function setAppServiceDirectoryVisibility(core: RoomCore, asId: string, networkId: string, roomId: string, visibility: DirectoryVisibility): Promise<void> {
  if ((await roomById(core.db, roomId)) === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  await setAppServiceListing(core.db, asId, networkId, roomId, visibility === 'public');
}

/**
 * Which directory a /publicRooms request asks for: this server's own rooms (undefined), with
 * `include_all_networks` those of every service's network too, or one network named as
 * `<appservice id>|<network id>` (as /thirdparty/protocols names instances). Both at once is a
 * contradiction: 400.
 */
export function directoryNetwork(includeAllNetworks: boolean, instanceId: string | undefined): DirectoryNetwork | undefined {
  if (instanceId === undefined) return includeAllNetworks ? 'all' : undefined;
  if (includeAllNetworks) throw HearthError.invalidParam("Can't use include_all_networks with an explicit network");
  const [asId, networkId, ...rest] = instanceId.split('|');
  if (!asId || !networkId || rest.length > 0) throw HearthError.invalidParam(`Invalid third_party_instance_id ${JSON.stringify(instanceId.slice(0, 100))}`);
  return { asId, networkId };
}

export interface PublicRoomsRequest {
  /** This server's own directory when absent. */
  readonly network?: DirectoryNetwork;
  readonly limit?: number;
  readonly since?: string;
  readonly searchTerm?: string;
  /** Only rooms of these types (null: rooms without a type). */
  readonly roomTypes?: readonly (string | null)[];
  /** The server whose directory is asked for; only this server's is known. */
  readonly server?: string;
}

export interface PublicRoomsChunkEntry {
  room_id: string;
  num_joined_members: number;
  world_readable: boolean;
  guest_can_join: boolean;
  join_rule?: string;
  name?: string;
  topic?: string;
  canonical_alias?: string;
  avatar_url?: string;
  room_type?: string;
}

export interface PublicRoomsResponse {
  chunk: PublicRoomsChunkEntry[];
  next_batch?: string;
  prev_batch?: string;
  total_room_count_estimate: number;
}

const MAX_LIMIT = 500;

function decodeSince(since: string): number {
  if (!/^p\d{1,9}$/.test(since)) throw HearthError.invalidParam('Invalid pagination token');
  return Number(since.slice(1));
}

/** A room as the directory lists it, from its row's summary columns (also a summary's and a hierarchy's base). */
export function directoryEntry(row: RoomRow): PublicRoomsChunkEntry {
  const entry: PublicRoomsChunkEntry = {
    room_id: row.room_id,
    num_joined_members: Number(row.joined_members),
    world_readable: row.history_visibility === 'world_readable',
    guest_can_join: row.guest_access === 'can_join',
  };
  if (row.join_rule !== null) entry.join_rule = row.join_rule;
  if (row.name !== null) entry.name = row.name;
  if (row.topic !== null) entry.topic = row.topic;
  if (row.canonical_alias !== null) entry.canonical_alias = row.canonical_alias;
  if (row.avatar_url !== null) entry.avatar_url = row.avatar_url;
  if (row.room_type !== null) entry.room_type = row.room_type;
  return entry;
}

export async function listPublicRooms(core: RoomCore, req: PublicRoomsRequest): Promise<PublicRoomsResponse> {
  if (req.server !== undefined && req.server !== core.serverName) {
    throw HearthError.notFound(`The directory of ${req.server} cannot be reached: federation is disabled here`);
  }
  const limit = Math.min(MAX_LIMIT, req.limit ?? MAX_LIMIT);
  const offset = req.since === undefined ? 0 : decodeSince(req.since);
  const { rows, total } = await publicRooms(core.db, {
    offset,
    limit,
    ...(req.searchTerm !== undefined ? { search: req.searchTerm } : {}),
    ...(req.roomTypes !== undefined ? { roomTypes: req.roomTypes } : {}),
    ...(req.network !== undefined ? { network: req.network } : {}),
  });
  const out: PublicRoomsResponse = { chunk: rows.map(directoryEntry), total_room_count_estimate: total };
  if (offset + rows.length < total) out.next_batch = `p${offset + rows.length}`;
  if (offset > 0) out.prev_batch = `p${Math.max(0, offset - limit)}`;
  return out;
}
