// Room aliases of this server (client API, "Room aliases"): creating one needs membership of the
// room; deleting one is for its creator, server admins, and those who may change the room's
// canonical alias. A deleted alias is also taken out of the room's m.room.canonical_alias.

import { HearthError } from '../../protocol/errors.js';
import { parseRoomAlias, serverNameOf } from '../../protocol/ids.js';
import type { JsonObject } from '../../protocol/json.js';
import { powerLevelsFromEvents, requiredPowerLevelForEvent, userPowerLevel } from '../../protocol/power-levels.js';
import { aliasRow, aliasesOfRoom, deleteAlias, insertAlias } from '../../storage/rooms/aliases.js';
import type { Actor } from '../actor.js';
import type { RoomCore } from '../core.js';
import type { RoomHead } from '../head.js';
import { requireHistoryAccess, roomAccess } from '../query/access.js';
import { aliasTarget } from './alias-target.js';

function localAlias(core: RoomCore, text: string): string {
  const alias = parseRoomAlias(text);
  if (serverNameOf(alias) !== core.serverName) throw HearthError.invalidParam('Room alias must be local');
  return alias;
}

/** Whether the user is joined and may send m.room.canonical_alias: who may manage a room's aliases and listing. */
export function canManageRoomListing(head: RoomHead, userId: string): boolean {
  if (head.membership(userId) !== 'join') return false;
  const levels = powerLevelsFromEvents(head.get('m.room.power_levels'), head.get('m.room.create'), head.version);
  return userPowerLevel(levels, userId) >= requiredPowerLevelForEvent(levels, 'm.room.canonical_alias', true);
}

export async function createAlias(core: RoomCore, actor: Actor, aliasText: string, roomId: string): Promise<void> {
  const alias = localAlias(core, aliasText);
  const head = await core.head(roomId);
  if (head.membership(actor.userId) !== 'join' && actor.isAdmin !== true) {
    throw HearthError.forbidden('You must be in the room to create an alias for it');
  }
  if (core.reservedAliases.has(alias) || !(await insertAlias(core.db, { alias, roomId, creator: actor.userId, createdTs: core.now() }))) {
    throw new HearthError(409, 'M_UNKNOWN', `Room alias ${alias} already exists`);
  }
}

export async function resolveAlias(core: RoomCore, aliasText: string): Promise<{ room_id: string; servers: string[] }> {
  const alias = parseRoomAlias(aliasText);
  const roomId = await aliasTarget(core, alias);
  if (roomId === undefined) throw HearthError.notFound(`Room alias ${alias} not found`);
  return { room_id: roomId, servers: [core.serverName] };
}

export async function removeAlias(core: RoomCore, actor: Actor, aliasText: string): Promise<void> {
  const alias = localAlias(core, aliasText);
  const row = await aliasRow(core.db, alias);
  if (row === undefined) throw HearthError.notFound(`Room alias ${alias} not found`);
  const head = await core.findHead(row.room_id);
  const allowed = row.creator === actor.userId || actor.isAdmin === true || (head !== undefined && canManageRoomListing(head, actor.userId));
  if (!allowed) throw HearthError.forbidden('You may not delete this alias');
  await deleteAlias(core.db, alias);
  if (head !== undefined) await dropFromCanonicalAlias(core, actor, row.room_id, alias);
}

/** Takes a deleted alias out of the room's canonical alias event, when the user may change it. */
async function dropFromCanonicalAlias(core: RoomCore, actor: Actor, roomId: string, alias: string): Promise<void> {
  try {
    await core.send(roomId, (head) => {
      const current = head.get('m.room.canonical_alias');
      if (current === undefined) return { existingEventId: '' };
      const content: JsonObject = { ...current.content };
      let changed = false;
      if (content.alias === alias) {
        delete content.alias;
        changed = true;
      }
      if (Array.isArray(content.alt_aliases) && content.alt_aliases.includes(alias)) {
        content.alt_aliases = content.alt_aliases.filter((a) => a !== alias);
        changed = true;
      }
      if (!changed) return { existingEventId: current.event_id };
      return { type: 'm.room.canonical_alias', sender: actor.userId, stateKey: '', content };
    });
  } catch (err) {
    // The alias is gone either way; a user without the power to edit the event leaves it stale.
    if (!(err instanceof HearthError && err.status === 403)) throw err;
  }
}

/** GET /rooms/{roomId}/aliases: for those who may read the room's history. */
export async function roomAliases(core: RoomCore, actor: Actor, roomId: string): Promise<string[]> {
  const access = await roomAccess(core, roomId, actor.userId);
  if (actor.isAdmin !== true) requireHistoryAccess(access, actor.userId);
  return aliasesOfRoom(core.db, roomId);
}
