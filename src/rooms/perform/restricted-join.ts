// Restricted joins (join rule `restricted` in room versions 8+, `knock_restricted` in 10+): a user
// who is neither invited nor joined may join when they are joined to one of the rooms the join
// rule's `allow` lists. The auth rules only check the voucher the join names
// (`join_authorised_via_users_server`: joined, able to invite); whether the user is in an allowed
// room is this server's to judge, by what it knows of those rooms. It names one of its own users
// and signs the join.

import type { RoomEvent } from '../../protocol/events.js';
import { isUserOf } from '../../protocol/ids.js';
import { isJsonObject } from '../../protocol/json.js';
import { powerLevelsFromEvents, userPowerLevel } from '../../protocol/power-levels.js';
import { serverJoinedNow } from '../../storage/rooms/for-servers.js';
import { isJoinedTo } from '../../storage/rooms/memberships.js';
import { roomById } from '../../storage/rooms/rooms.js';
import type { RoomCore } from '../core.js';
import type { RoomHead } from '../head.js';

/** Whether `userId`'s join to the room needs a voucher: a restricted rule, and not invited or joined. */
export function needsVoucher(head: RoomHead): (userId: string) => boolean {
  const rule = head.get('m.room.join_rules')?.content['join_rule'];
  const restricted = (head.version.restrictedJoinRule && rule === 'restricted') || (head.version.knockRestrictedJoinRule && rule === 'knock_restricted');
  return (userId) => {
    if (!restricted) return false;
    const current = head.membership(userId);
    return current !== 'join' && current !== 'invite';
  };
}

/**
 * Whether this server can vouch that `userId` is joined to a room the join rule allows:
 * `allowed`; `denied` (it is in an allowed room and the user is not); `unknown` (it is in none).
 */
export async function allowedByMembership(core: RoomCore, joinRules: RoomEvent | undefined, userId: string): Promise<'allowed' | 'denied' | 'unknown'> {
  const allow = joinRules?.content['allow'];
  let known = false;
  for (const entry of Array.isArray(allow) ? allow : []) {
    if (!isJsonObject(entry) || entry['type'] !== 'm.room_membership' || typeof entry['room_id'] !== 'string') continue;
    const roomId = entry['room_id'];
    if (await isJoinedTo(core.db, userId, roomId)) return 'allowed';
    const row = await roomById(core.db, roomId);
    if (row !== undefined && (await serverJoinedNow(core.db, Number(row.room_nid), core.serverName))) known = true;
  }
  return known ? 'denied' : 'unknown';
}

/** Of this server's joined members, one whose power level lets them invite (the highest); undefined if none. */
export function voucherOn(head: RoomHead, serverName: string): string | undefined {
  // The levels as the auth rules read them (v12 creators' is infinite).
  const levels = powerLevelsFromEvents(head.get('m.room.power_levels'), head.get('m.room.create'), head.version);
  const invite = levels.invite;
  let best: string | undefined;
  let bestLevel = -Infinity;
  for (const [userId, membership] of head.memberships()) {
    if (membership !== 'join' || !isUserOf(userId, serverName)) continue;
    const level = userPowerLevel(levels, userId);
    if (level >= invite && level > bestLevel) (best = userId), (bestLevel = level);
  }
  return best;
}
