// Room IDs and room aliases (appendix "Room IDs", "Room Aliases"). Versions 1–11 name rooms
// `!opaque:server_name`; from version 12 a room id is its create event's id with `!` for `$` (43
// characters of URL-safe base64, no server name). Aliases are `#alias:server_name`. Localparts may
// hold any Unicode scalar value but `:` and NUL; both IDs are at most 255 bytes.

import { type Branded, type ParseOptions, checked } from './common.js';
import { frame, opaqueLocalProblem } from './qualified.js';
import type { ServerName } from './server-name.js';

export type RoomId = Branded<'RoomId'>;
export type RoomAlias = Branded<'RoomAlias'>;

function qualifiedProblem(sigil: string, what: string) {
  return (s: string): string | undefined => {
    const f = frame(s, sigil, what);
    if (f.problem !== undefined) return f.problem;
    // The spec does not say so outright, but nothing allocates an empty localpart.
    if (f.local.length === 0) return `${what} is empty`;
    return opaqueLocalProblem(f.local, what);
  };
}

const qualifiedRoomIdProblem = qualifiedProblem('!', 'opaque part');
/** `!` and the create event's reference hash, as v4+ event ids carry it. */
const HASHED_ROOM_ID = /^![A-Za-z0-9_-]{43}$/;

function roomIdProblem(s: string): string | undefined {
  return HASHED_ROOM_ID.test(s) ? undefined : qualifiedRoomIdProblem(s);
}

/** Whether `roomId` is of the v12 form, the create event's id (no server name). */
export function isHashedRoomId(roomId: string): boolean {
  return HASHED_ROOM_ID.test(roomId);
}

/** The id of the create event a v12-form room id names; undefined for a `!opaque:server` id. */
export function createEventIdOfRoom(roomId: string): string | undefined {
  return HASHED_ROOM_ID.test(roomId) ? '$' + roomId.slice(1) : undefined;
}

/** The v12 room id of the room whose create event is `createEventId` (a v4-format event id). */
export function roomIdOfCreateEvent(createEventId: string): RoomId {
  return parseRoomId('!' + createEventId.slice(1));
}
const roomAliasProblem = qualifiedProblem('#', 'alias');

export function parseRoomId(input: unknown, opts?: ParseOptions): RoomId {
  return checked('room ID', input, roomIdProblem, opts) as RoomId;
}

export function isRoomId(input: unknown): input is RoomId {
  return typeof input === 'string' && roomIdProblem(input) === undefined;
}

export function tryParseRoomId(input: unknown): RoomId | undefined {
  return isRoomId(input) ? input : undefined;
}

/** The room ID `!opaque:serverName`, checked. */
export function roomIdFrom(opaque: string, serverName: ServerName, opts?: ParseOptions): RoomId {
  return parseRoomId(`!${opaque}:${serverName}`, opts);
}

export function parseRoomAlias(input: unknown, opts?: ParseOptions): RoomAlias {
  return checked('room alias', input, roomAliasProblem, opts) as RoomAlias;
}

export function isRoomAlias(input: unknown): input is RoomAlias {
  return typeof input === 'string' && roomAliasProblem(input) === undefined;
}

export function tryParseRoomAlias(input: unknown): RoomAlias | undefined {
  return isRoomAlias(input) ? input : undefined;
}

/** The room alias `#alias:serverName`, checked. */
export function roomAliasFrom(alias: string, serverName: ServerName, opts?: ParseOptions): RoomAlias {
  return parseRoomAlias(`#${alias}:${serverName}`, opts);
}
