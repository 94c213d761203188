// Room IDs `!opaque:server_name` and room aliases `#alias:server_name` (appendix "Room IDs",
// "Room Aliases"). Both localparts may hold any Unicode scalar value but `:` and NUL; both IDs are
// at most 255 bytes. Room versions 1–11 all carry the server name in the room ID.

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

const roomIdProblem = qualifiedProblem('!', 'opaque part');
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
