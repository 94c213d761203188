// Member event content: join, invite and knock carry the target's display name and avatar from
// their profile (as deployed servers do); an invitee unknown here is first asked of the
// application services (AppServiceQueries). Every membership may carry a reason. A join may carry
// further keys of the client's; a guest's own member events say `kind: guest`, which is how its
// membership is found when the room stops admitting guests.

import { HearthError } from '../../protocol/errors.js';
import type { JsonObject } from '../../protocol/json.js';
import type { RoomCore } from '../core.js';

export interface MemberOptions {
  readonly reason?: string;
  readonly isDirect?: boolean;
  /** Further content keys the client asked for (a join's body). */
  readonly extra?: JsonObject;
  /** The member event is a guest's own. */
  readonly guest?: boolean;
}

/**
 * Keys of the client's content the server decides: the membership, the profile (always the
 * user's own), the guest mark, and the restricted-join authoriser (which the joining server
 * cannot vouch for).
 */
const SERVER_KEYS: readonly string[] = ['membership', 'displayname', 'avatar_url', 'kind', 'join_authorised_via_users_server'];

export async function memberContent(core: RoomCore, target: string, membership: string, options: MemberOptions = {}): Promise<JsonObject> {
  const content: JsonObject = {};
  if (options.extra !== undefined) {
    for (const [k, v] of Object.entries(options.extra)) if (!SERVER_KEYS.includes(k)) content[k] = v;
  }
  content.membership = membership;
  if (membership === 'join' || membership === 'invite' || membership === 'knock') {
    let profile = await core.profiles?.profile(target);
    // An invitee unknown here may be an application service's, which can create it on demand.
    if (profile === undefined && membership === 'invite' && (await core.appServiceQueries?.queryUser(target)) === true) {
      profile = await core.profiles?.profile(target);
    }
    if (typeof profile?.displayname === 'string') content.displayname = profile.displayname;
    if (typeof profile?.avatar_url === 'string') content.avatar_url = profile.avatar_url;
  }
  if (options.reason !== undefined) content.reason = options.reason;
  if (options.isDirect === true) content.is_direct = true;
  if (options.guest === true) content.kind = 'guest';
  return content;
}

/**
 * The ids of the events that sends to several rooms made ('' for a send that had nothing to do).
 * A room refusing its send (its power levels, say) must not stop the others; a failure of the
 * server itself is thrown.
 */
export function sentEventIds(results: readonly PromiseSettledResult<string>[]): string[] {
  const ids: string[] = [];
  for (const r of results) {
    if (r.status === 'fulfilled') {
      if (r.value !== '') ids.push(r.value);
    } else if (!(r.reason instanceof HearthError)) {
      throw r.reason;
    }
  }
  return ids;
}
