// A user's new display name or avatar reaches the rooms they are in: a new join member event in
// each, its other content kept. The rooms are updated concurrently, so the events share
// transactions.

import type { JsonObject } from '../../protocol/json.js';
import { roomsOfUser } from '../../storage/rooms/memberships.js';
import type { MemberProfile, RoomCore } from '../core.js';
import { sentEventIds } from './member-event.js';

/** Sends the updated member events; returns the ids of the member events now current. */
export async function updateMemberProfiles(core: RoomCore, userId: string, profile: MemberProfile): Promise<string[]> {
  const rooms = await roomsOfUser(core.db, userId, ['join']);
  const results = await Promise.allSettled(
    rooms.map((r) =>
      core.send(r.room_id, (head) => {
        const current = head.get('m.room.member', userId);
        if (current?.content.membership !== 'join') return { existingEventId: '' };
        const content: JsonObject = { ...current.content };
        delete content.displayname;
        delete content.avatar_url;
        delete content.reason;
        if (typeof profile.displayname === 'string') content.displayname = profile.displayname;
        if (typeof profile.avatar_url === 'string') content.avatar_url = profile.avatar_url;
        return { type: 'm.room.member', sender: userId, stateKey: userId, content };
      }),
    ),
  );
  return sentEventIds(results);
}
