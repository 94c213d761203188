// Members of rooms and rooms of members: GET /rooms/{roomId}/members (at, membership,
// not_membership), /joined_members, /joined_rooms.

import { HearthError } from '../../protocol/errors.js';
import { membersOfRoom, roomsOfUser } from '../../storage/rooms/memberships.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import { byStreamOrder, positionOf } from '../stored-event.js';
import { decodeTimelineToken } from '../tokens.js';
import { isJoined, roomAccess } from './access.js';
import { departureEvent, readableState } from './state.js';

export interface MembersRequest {
  /** A pagination or sync token: the members as they were at that point. */
  readonly at?: string;
  readonly membership?: string;
  readonly notMembership?: string;
}

export async function roomMembers(core: RoomCore, actor: Actor, roomId: string, req: MembersRequest = {}): Promise<ClientEvent[]> {
  const access = await roomAccess(core, roomId, actor.userId);
  let state = await readableState(core, access, actor.userId);
  if (req.at !== undefined) {
    let position = decodeTimelineToken(req.at);
    // A departed user sees no further than their departure.
    const departure = await departureEvent(core, access);
    if (departure !== undefined) position = Math.min(position, positionOf(departure));
    state = await core.reader.stateAt(access.room.nid, position);
  }
  const members = [...state.values()].filter((e) => {
    if (e.type !== 'm.room.member') return false;
    const m = e.pdu.content.membership;
    if (req.membership !== undefined && m !== req.membership) return false;
    if (req.notMembership !== undefined && m === req.notMembership) return false;
    return true;
  });
  members.sort(byStreamOrder);
  return core.reader.clientEvents(members, { now: core.now(), viewer: actor });
}

/** Both fields are always present, null when unset (as the reference server answers). */
export interface JoinedMember {
  display_name: string | null;
  avatar_url: string | null;
}

export async function joinedMembers(core: RoomCore, actor: Actor, roomId: string): Promise<Record<string, JoinedMember>> {
  const access = await roomAccess(core, roomId, actor.userId);
  if (!isJoined(access)) throw HearthError.forbidden(`User ${actor.userId} is not in room ${roomId}`);
  const rows = await membersOfRoom(core.db, access.room.nid, ['join']);
  const events = await core.reader.eventsByNids(rows.map((r) => Number(r.event_nid)));
  const out: Record<string, JoinedMember> = {};
  for (const r of rows) {
    const event = events.get(Number(r.event_nid));
    // A redacted member event keeps only its membership.
    const content = event === undefined || event.redactedBy !== undefined ? {} : event.pdu.content;
    out[r.user_id] = {
      display_name: typeof content.displayname === 'string' ? content.displayname : null,
      avatar_url: typeof content.avatar_url === 'string' ? content.avatar_url : null,
    };
  }
  return out;
}

export async function joinedRooms(core: RoomCore, userId: string): Promise<string[]> {
  return (await roomsOfUser(core.db, userId, ['join'])).map((r) => r.room_id);
}
