// Room summaries (client API, GET /room_summary/{roomIdOrAlias}, MSC3266): what a room is, for a
// user deciding whether to join it; space hierarchies (hierarchy.ts) list the same for each room.
// A room is shown to whoever may see it, as the spec's hierarchy lists and the reference server
// decides: its join rule is public, knock or knock_restricted; its history is world_readable; the
// user is joined, invited or knocking; or the rule is restricted (or knock_restricted) and the
// user is joined to one of the rooms it allows. A banned user sees nothing. Another server sees a
// room on the same terms, with "one of its users is joined or invited" and "it is in an allowed
// room" for the user's own membership.
//
// A room this server is not in is asked of other servers (their federation /hierarchy, through the
// RemoteHierarchy port) when the request names servers to ask.

import { stateKey } from '../../protocol/events.js';
import { HearthError } from '../../protocol/errors.js';
import { isUserOf } from '../../protocol/ids.js';
import { isJsonObject } from '../../protocol/json.js';
import { serverJoinedNow } from '../../storage/rooms/for-servers.js';
import { isJoinedTo, membersOfRoom, membershipOf } from '../../storage/rooms/memberships.js';
import { roomById, type RoomRow } from '../../storage/rooms/rooms.js';
import type { RoomCore } from '../core.js';
import { directoryEntry, type PublicRoomsChunkEntry } from '../perform/directory.js';

/** What a summary and a hierarchy's room entry both hold. */
export interface RoomSummaryEntry extends PublicRoomsChunkEntry {
  room_version?: string;
  encryption?: string;
  allowed_room_ids?: string[];
}

export interface RoomSummary extends RoomSummaryEntry {
  /** The asking user's membership ('leave' when none); absent when nobody is asking. */
  membership?: string;
}

/** An m.space.child event as hierarchies carry it: stripped state with its origin_server_ts. */
export interface ChildState {
  readonly type: string;
  readonly state_key: string;
  readonly content: Record<string, unknown>;
  readonly sender: string;
  readonly origin_server_ts: number;
}

/** A room and its children as another server's /hierarchy described it. */
export interface RemoteSpace {
  readonly room: RoomSummaryEntry & { readonly children_state: readonly ChildState[] };
  /** Summaries of the children that server lets this one see. */
  readonly children: readonly RoomSummaryEntry[];
}

/** Other servers' answers about rooms this server is not in (federation /hierarchy). */
export interface RemoteHierarchy {
  /** The room as the first of `via` that answers describes it; undefined when none does. */
  space(roomId: string, via: readonly string[], suggestedOnly: boolean): Promise<RemoteSpace | undefined>;
}

const OPEN_RULES = new Set(['public', 'knock', 'knock_restricted']);
const RESTRICTED_RULES = new Set(['restricted', 'knock_restricted']);
const SEEING_MEMBERSHIPS = new Set(['join', 'invite', 'knock']);

/** A room whose state this server holds. */
export interface LocalRoom {
  readonly row: RoomRow;
  readonly entry: RoomSummaryEntry;
  /** Whether this server is still in the room (else its state may be out of date). */
  readonly joinedHere: boolean;
}

export async function localRoom(core: RoomCore, roomId: string): Promise<LocalRoom | undefined> {
  const row = await roomById(core.db, roomId);
  if (row === undefined || row.state_snapshot_nid === null) return undefined;
  const snapshot = Number(row.state_snapshot_nid);
  const entry: RoomSummaryEntry = { ...directoryEntry(row), room_version: row.room_version };
  const encryption = (await core.reader.stateSubsetOfSnapshot(snapshot, 'm.room.encryption', [''])).get(stateKey('m.room.encryption', ''));
  const algorithm = encryption?.redactedBy === undefined ? encryption?.pdu.content['algorithm'] : undefined;
  if (typeof algorithm === 'string') entry.encryption = algorithm;
  if (RESTRICTED_RULES.has(row.join_rule ?? '')) {
    const rules = (await core.reader.stateSubsetOfSnapshot(snapshot, 'm.room.join_rules', [''])).get(stateKey('m.room.join_rules', ''));
    const allow = rules?.pdu.content['allow'];
    const allowed = (Array.isArray(allow) ? allow : []).flatMap((a) =>
      isJsonObject(a) && a['type'] === 'm.room_membership' && typeof a['room_id'] === 'string' ? [a['room_id']] : [],
    );
    if (allowed.length > 0) entry.allowed_room_ids = allowed;
  }
  return { row, entry, joinedHere: await serverJoinedNow(core.db, Number(row.room_nid), core.serverName) };
}

/** `userId`'s membership of a room held here ('leave' when none). */
export async function membershipIn(core: RoomCore, room: LocalRoom, userId: string): Promise<string> {
  return (await membershipOf(core.db, Number(room.row.room_nid), userId))?.membership ?? 'leave';
}

/** Whether a user (undefined: nobody signed in) with this membership may see a room so described. */
export async function userMaySee(core: RoomCore, entry: RoomSummaryEntry, membership: string | undefined, userId: string | undefined): Promise<boolean> {
  if (membership === 'ban') return false;
  if (OPEN_RULES.has(entry.join_rule ?? '') || entry.world_readable || SEEING_MEMBERSHIPS.has(membership ?? '')) return true;
  if (userId === undefined || !RESTRICTED_RULES.has(entry.join_rule ?? '')) return false;
  for (const roomId of entry.allowed_room_ids ?? []) if (await isJoinedTo(core.db, userId, roomId)) return true;
  return false;
}

/** Whether another server may see a room held here. */
export async function serverMaySee(core: RoomCore, room: LocalRoom, origin: string): Promise<boolean> {
  const { entry } = room;
  if (OPEN_RULES.has(entry.join_rule ?? '') || entry.world_readable) return true;
  const nid = Number(room.row.room_nid);
  if (await serverJoinedNow(core.db, nid, origin)) return true;
  if ((await membersOfRoom(core.db, nid, ['invite'])).some((m) => isUserOf(m.user_id, origin))) return true;
  if (!RESTRICTED_RULES.has(entry.join_rule ?? '')) return false;
  for (const roomId of entry.allowed_room_ids ?? []) {
    const allowed = await roomById(core.db, roomId);
    if (allowed !== undefined && (await serverJoinedNow(core.db, Number(allowed.room_nid), origin))) return true;
  }
  return false;
}

/**
 * The summary of a room for `userId` (undefined for a request without a token): from the state
 * held here while this server is in the room, else from the first of `via` that describes it.
 */
export async function roomSummary(core: RoomCore, remote: RemoteHierarchy | undefined, roomId: string, userId: string | undefined, via: readonly string[]): Promise<RoomSummary> {
  const local = await localRoom(core, roomId);
  const membership = local === undefined || userId === undefined ? undefined : await membershipIn(core, local, userId);
  let entry = local?.joinedHere === true ? local.entry : undefined;
  if (entry === undefined && remote !== undefined && via.length > 0) entry = (await remote.space(roomId, via, false))?.room;
  entry ??= local?.entry;
  const asked = membership ?? (userId === undefined ? undefined : 'leave');
  if (entry === undefined || !(await userMaySee(core, entry, asked, userId))) throw HearthError.notFound('Room not found or is not accessible');
  const { children_state: _children, ...summary } = entry as RoomSummaryEntry & { children_state?: unknown };
  return asked === undefined ? summary : { ...summary, membership: asked };
}
