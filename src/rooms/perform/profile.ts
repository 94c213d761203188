// A user's new display name or avatar reaches the rooms they are in: a new join member event in
// each, its other content kept. The rooms are updated concurrently, so the events share
// transactions.

import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import { roomsOfUser } from '../../storage/rooms/memberships.js';
import type { MemberProfile, RoomCore } from '../core.js';

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
  const ids: string[] = [];
  for (const r of results) {
    if (r.status === 'fulfilled') {
      if (r.value !== '') ids.push(r.value);
    } else if (!(r.reason instanceof HearthError)) {
      // A room refusing the update (its power levels, say) must not stop the others; a failure
      // of the server itself is reported.
      throw r.reason;
    }
  }
  return ids;
}
