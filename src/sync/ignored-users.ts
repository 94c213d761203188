// Who a user ignores, kept between syncs: the list only changes through the user's
// m.ignored_user_list account data, which every sync reads anyway when it moved.

import { isJsonObject } from '../protocol/json.js';
import type { AccountDataChanges } from '../users/account-data.js';

const IGNORED_USERS_TYPE = 'm.ignored_user_list';
const KEPT = 50_000;

export class IgnoredUsers {
  private readonly known = new Map<string, { at: number; users: ReadonlySet<string> }>();

  constructor(private readonly load: (userId: string) => Promise<Set<string>>) {}

  /**
   * The user's ignore list as of `upTo` on the account_data stream. `changes` are the user's
   * account data changes after `since` (undefined when the stream did not move).
   */
  async of(userId: string, since: number | undefined, upTo: number, changes: AccountDataChanges | undefined): Promise<ReadonlySet<string>> {
    const changed = changes?.global.find((e) => e.type === IGNORED_USERS_TYPE);
    let users: ReadonlySet<string>;
    if (changed !== undefined) {
      const ignored = changed.content['ignored_users'];
      users = new Set(isJsonObject(ignored) ? Object.keys(ignored) : []);
    } else {
      const known = this.known.get(userId);
      users = known !== undefined && since !== undefined && known.at >= since ? known.users : await this.load(userId);
    }
    this.known.delete(userId);
    this.known.set(userId, { at: upTo, users });
    if (this.known.size > KEPT) this.known.delete(this.known.keys().next().value as string);
    return users;
  }
}
