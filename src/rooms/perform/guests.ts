// A room that stops admitting guests (m.room.guest_access anything but can_join) loses its guests:
// each guest of this server who is joined or invited leaves, by a leave event of their own, as the
// reference server does it (no one's power level is needed for that). Guests are known by the
// `kind: guest` their own member events carry.

import { serverNameOf, tryParseUserId } from '../../protocol/ids.js';
import { stateKey, type RoomEvent, type StateKey } from '../../protocol/events.js';
import type { RoomCore } from '../core.js';
import { memberContent, sentEventIds } from './member-event.js';

function isGuestMember(e: RoomEvent | undefined): boolean {
  const m = e?.content.membership;
  return (m === 'join' || m === 'invite') && e?.content.kind === 'guest';
}

/** Makes every local guest of the room leave it; returns the leave events' ids. */
export async function removeGuests(core: RoomCore, roomId: string): Promise<string[]> {
  const head = await core.head(roomId);
  // Local members who are joined or invited, then those of them whose member event says guest.
  const candidates: StateKey[] = [];
  for (const [member, membership] of head.memberships()) {
    if (membership !== 'join' && membership !== 'invite') continue;
    const userId = tryParseUserId(member, { allowNonCompliant: true });
    if (userId !== undefined && serverNameOf(userId) === core.serverName) candidates.push(stateKey('m.room.member', userId));
  }
  const guests: string[] = [];
  for (const e of (await head.read(candidates)).values()) if (isGuestMember(e)) guests.push(e.state_key!);
  const results = await Promise.allSettled(
    guests.map(async (userId) => {
      const content = await memberContent(core, userId, 'leave', { guest: true });
      return core.send(roomId, (h) =>
        // Gone meanwhile (left on their own, say): nothing to do.
        isGuestMember(h.get('m.room.member', userId)) ? { type: 'm.room.member', sender: userId, stateKey: userId, content } : { existingEventId: '' },
      );
    }),
  );
  return sentEventIds(results);
}
