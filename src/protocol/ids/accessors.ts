// Parts of parsed identifiers. The parsers have checked the framing, so these only slice.

import type { EventId } from './event-id.js';
import type { RoomAlias, RoomId } from './room-ids.js';
import type { ServerName } from './server-name.js';
import type { UserId } from './user-id.js';

/** The localpart of a user ID, room ID or alias: between the sigil and the first ':'. */
export function localpartOf(id: UserId | RoomId | RoomAlias): string {
  return id.slice(1, id.indexOf(':'));
}

/** The server name of a user ID, room ID or alias, or of a v1–v2 event ID (undefined for hash IDs). */
export function serverNameOf(id: UserId | RoomId | RoomAlias): ServerName;
export function serverNameOf(id: EventId): ServerName | undefined;
export function serverNameOf(id: UserId | RoomId | RoomAlias | EventId): ServerName | undefined {
  const colon = id.indexOf(':');
  return colon === -1 ? undefined : (id.slice(colon + 1) as ServerName);
}
