// Room summaries (client API, GET /room_summary/{roomIdOrAlias}, MSC3266): what a room is, for a
// user deciding whether to join it. A room is summarised to whoever may see it, as the reference
// server decides: its join rule is public, knock or knock_restricted; its history is
// world_readable; the user is joined, invited or knocking; or the rule is restricted (or
// knock_restricted) and the user is joined to one of the rooms it allows. Anyone else, and
// anyone asking about a room this server does not hold, gets 404.

import { stateKey } from '../../protocol/events.js';
import { HearthError } from '../../protocol/errors.js';
import { isJsonObject } from '../../protocol/json.js';
import { isJoinedTo, membershipOf } from '../../storage/rooms/memberships.js';
import { roomById } from '../../storage/rooms/rooms.js';
import type { RoomCore } from '../core.js';
import type { PublicRoomsChunkEntry } from '../perform/directory.js';

export interface RoomSummary extends PublicRoomsChunkEntry {
  room_version: string;
  encryption?: string;
  allowed_room_ids?: string[];
  /** The asking user's membership ('leave' when none); absent when nobody is asking. */
  membership?: string;
}

const OPEN_RULES = new Set(['public', 'knock', 'knock_restricted']);
const RESTRICTED_RULES = new Set(['restricted', 'knock_restricted']);
const SEEING_MEMBERSHIPS = new Set(['join', 'invite', 'knock']);

/** The summary of a room this server holds; `userId` undefined for a request without a token. */
export async function roomSummary(core: RoomCore, roomId: string, userId: string | undefined): Promise<RoomSummary> {
  const row = await roomById(core.db, roomId);
  if (row === undefined || row.state_snapshot_nid === null) throw HearthError.notFound('Room not found');
  const snapshot = Number(row.state_snapshot_nid);
  const rules = (await core.reader.stateSubsetOfSnapshot(snapshot, 'm.room.join_rules', [''])).get(stateKey('m.room.join_rules', ''));
  const allow = rules?.pdu.content['allow'];
  const allowed = RESTRICTED_RULES.has(row.join_rule ?? '')
    ? (Array.isArray(allow) ? allow : []).flatMap((a) => (isJsonObject(a) && a['type'] === 'm.room_membership' && typeof a['room_id'] === 'string' ? [a['room_id']] : []))
    : [];
  const membership = userId === undefined ? undefined : ((await membershipOf(core.db, Number(row.room_nid), userId))?.membership ?? 'leave');

  const open = OPEN_RULES.has(row.join_rule ?? '') || row.history_visibility === 'world_readable' || SEEING_MEMBERSHIPS.has(membership ?? '');
  if (!open && !(userId !== undefined && (await joinedToAny(core, userId, allowed)))) throw HearthError.notFound('Room not found or is not accessible');

  const summary: RoomSummary = {
    room_id: row.room_id,
    num_joined_members: Number(row.joined_members),
    world_readable: row.history_visibility === 'world_readable',
    guest_can_join: row.guest_access === 'can_join',
    room_version: row.room_version,
  };
  if (row.join_rule !== null) summary.join_rule = row.join_rule;
  if (row.name !== null) summary.name = row.name;
  if (row.topic !== null) summary.topic = row.topic;
  if (row.canonical_alias !== null) summary.canonical_alias = row.canonical_alias;
  if (row.avatar_url !== null) summary.avatar_url = row.avatar_url;
  if (row.room_type !== null) summary.room_type = row.room_type;
  const encryption = (await core.reader.stateSubsetOfSnapshot(snapshot, 'm.room.encryption', [''])).get(stateKey('m.room.encryption', ''));
  const algorithm = encryption?.redactedBy === undefined ? encryption?.pdu.content['algorithm'] : undefined;
  if (typeof algorithm === 'string') summary.encryption = algorithm;
  if (allowed.length > 0) summary.allowed_room_ids = allowed;
  if (membership !== undefined) summary.membership = membership;
  return summary;
}

async function joinedToAny(core: RoomCore, userId: string, roomIds: readonly string[]): Promise<boolean> {
  for (const roomId of roomIds) if (await isJoinedTo(core.db, userId, roomId)) return true;
  return false;
}
