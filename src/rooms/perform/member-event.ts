// Member event content: join, invite and knock carry the target's display name and avatar from
// their profile (as deployed servers do); every membership may carry a reason.

import type { JsonObject } from '../../protocol/json.js';
import type { RoomCore } from '../core.js';

export interface MemberOptions {
  readonly reason?: string;
  readonly isDirect?: boolean;
}

export async function memberContent(core: RoomCore, target: string, membership: string, options: MemberOptions = {}): Promise<JsonObject> {
  const content: JsonObject = { membership };
  if (membership === 'join' || membership === 'invite' || membership === 'knock') {
    const profile = await core.profiles?.profile(target);
    if (typeof profile?.displayname === 'string') content.displayname = profile.displayname;
    if (typeof profile?.avatar_url === 'string') content.avatar_url = profile.avatar_url;
  }
  if (options.reason !== undefined) content.reason = options.reason;
  if (options.isDirect === true) content.is_direct = true;
  return content;
}
