// GET /admin/whois/{userId}: where a user's devices were last seen from (address and user agent),
// for server admins and for the user themself. Each device records its latest request only
// (users/authenticator.ts), so a device lists one connection, or none before its first request.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseUserId, serverNameOf } from '../protocol/ids.js';
import type { Schema } from '../storage/schema.js';
import { listDevices } from '../storage/accounts/devices.js';
import { findUser } from '../storage/accounts/users.js';

export interface WhoisConnection {
  ip: string | null;
  last_seen: number;
  user_agent: string | null;
}

export interface WhoisResponse {
  user_id: string;
  devices: Record<string, { sessions: { connections: WhoisConnection[] }[] }>;
}

export class WhoisService {
  constructor(private readonly deps: { readonly db: Kysely<Schema>; readonly serverName: string }) {}

  async whois(requester: { userId: string; isAdmin: boolean }, target: string): Promise<WhoisResponse> {
    const userId = parseUserId(target, { allowNonCompliant: true });
    if (userId !== requester.userId && !requester.isAdmin) throw HearthError.forbidden('You are not a server admin');
    if (serverNameOf(userId) !== this.deps.serverName) throw new HearthError(400, 'M_UNKNOWN', 'Can only whois a local user');
    if ((await findUser(this.deps.db, userId)) === undefined) throw HearthError.notFound('User not found');
    const devices: WhoisResponse['devices'] = {};
    for (const d of await listDevices(this.deps.db, userId)) {
      const connections: WhoisConnection[] =
        d.last_seen_ts === null ? [] : [{ ip: d.last_seen_ip, last_seen: Number(d.last_seen_ts), user_agent: d.last_seen_user_agent }];
      devices[d.device_id] = { sessions: [{ connections }] };
    }
    return { user_id: userId, devices };
  }
}
