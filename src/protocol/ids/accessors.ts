// Parts of parsed identifiers. The parsers have checked the framing, so these only slice.

import type { EventId } from './event-id.js';
import type { RoomAlias, RoomId } from './room-ids.js';
import type { ServerName } from './server-name.js';
import type { UserId } from './user-id.js';

/** The localpart of a user ID, room ID or alias: between the sigil and the first ':' (or the end). */
export function localpartOf(id: UserId | RoomId | RoomAlias): string {
  const colon = id.indexOf(':');
  return id.slice(1, colon === -1 ? undefined : colon);
}

/**
 * The server name of a user ID or alias, of a v1–v11 room ID, or of a v1–v2 event ID (undefined
 * for hash IDs: v3+ event ids and v12 room ids).
 */
export function serverNameOf(id: UserId | RoomAlias): ServerName;
export function serverNameOf(id: RoomId | EventId): ServerName | undefined;
export function serverNameOf(id: UserId | RoomId | RoomAlias | EventId): ServerName | undefined {
  const colon = id.indexOf(':');
  return colon === -1 ? undefined : (id.slice(colon + 1) as ServerName);
}
