// Room ids and aliases as clients name rooms: an alias is looked up in this server's directory
// (one unknown there is asked of the application services whose namespaces hold it); a room or
// alias of another server cannot be reached with federation disabled (with it, joins go through
// perform/join.ts's remote path first).

import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, parseRoomId, serverNameOf, type RoomAlias } from '../../protocol/ids.js';
import { aliasRow } from '../../storage/rooms/aliases.js';
import type { RoomCore } from '../core.js';

/** The room id a `!room` id or `#alias` names; 404 M_NOT_FOUND when unknown here. */
export async function resolveRoomIdOrAlias(core: RoomCore, roomIdOrAlias: string): Promise<string> {
  if (roomIdOrAlias.startsWith('#')) {
    const alias = parseRoomAlias(roomIdOrAlias);
    const roomId = await aliasTarget(core, alias);
    if (roomId !== undefined) return roomId;
    if (serverNameOf(alias) !== core.serverName) {
      throw HearthError.notFound(`Room alias ${alias} is on another server; federation is disabled here`);
    }
    throw HearthError.notFound(`Room alias ${alias} not found`);
  }
  if (roomIdOrAlias.startsWith('!')) {
    const roomId = parseRoomId(roomIdOrAlias);
    if ((await core.findHead(roomId)) !== undefined) return roomId;
    if (serverNameOf(roomId) !== core.serverName) {
      throw HearthError.notFound(`Room ${roomId} is on another server; federation is disabled here`);
    }
    throw HearthError.notFound(`Unknown room ${roomId}`);
  }
  throw HearthError.invalidParam(`${roomIdOrAlias.slice(0, 100)} is neither a room id nor a room alias`);
}

/**
 * The room an alias of this server's directory names. One unknown there is asked of the
 * application services, and looked up once more when one says it created it.
 */
export async function aliasTarget(core: RoomCore, alias: RoomAlias): Promise<string | undefined> {
  const row = await aliasRow(core.db, alias);
  if (row !== undefined || (await core.appServiceQueries?.queryAlias(alias)) !== true) return row?.room_id;
  return (await aliasRow(core.db, alias))?.room_id;
}
