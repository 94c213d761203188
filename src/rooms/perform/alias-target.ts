// Room ids and aliases as clients name rooms: an alias is looked up in this server's directory; a
// room or alias of another server cannot be reached with federation disabled (with it, joins go
// through perform/join.ts's remote path first).

import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, parseRoomId, serverNameOf } from '../../protocol/ids.js';
import { aliasRow } from '../../storage/rooms/aliases.js';
import type { RoomCore } from '../core.js';

/** The room id a `!room` id or `#alias` names; 404 M_NOT_FOUND when unknown here. */
export async function resolveRoomIdOrAlias(core: RoomCore, roomIdOrAlias: string): Promise<string> {
  if (roomIdOrAlias.startsWith('#')) {
    const alias = parseRoomAlias(roomIdOrAlias);
    const row = await aliasRow(core.db, alias);
    if (row !== undefined) return row.room_id;
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
