// Which local account a login or a password stage names: an `m.id.user` identifier (a full user
// ID or a localpart) or the legacy top-level `user` field.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { tryParseUserId, serverNameOf, localpartOf } from '../protocol/ids.js';
import type { Schema } from '../storage/schema.js';
import { findUser, type UserRow } from '../storage/accounts/users.js';

/** The `user` string a login body or auth dict names; throws 400/403 for other identifier kinds. */
export function identifiedUser(body: JsonObject): string {
  const identifier = body['identifier'];
  if (identifier !== undefined) {
    if (!isJsonObject(identifier)) throw HearthError.badJson('identifier must be an object');
    const type = identifier['type'];
    if (type === 'm.id.user') {
      const user = identifier['user'];
      if (typeof user !== 'string') throw HearthError.badJson('identifier.user must be a string');
      return user;
    }
    if (type === 'm.id.thirdparty' || type === 'm.id.phone') {
      throw HearthError.forbidden('No account is bound to that third-party identifier');
    }
    throw new HearthError(400, 'M_UNKNOWN', 'Unknown login identifier type');
  }
  const user = body['user'];
  if (typeof user === 'string') return user;
  if (user !== undefined) throw HearthError.badJson('user must be a string');
  if (body['medium'] !== undefined || body['address'] !== undefined) {
    throw HearthError.forbidden('No account is bound to that third-party identifier');
  }
  throw new HearthError(400, 'M_MISSING_PARAM', 'Missing identifier');
}

/** The local user a `user` string names (exact localpart first, then lower-cased), if any. */
export async function findLocalUser(db: Kysely<Schema>, serverName: string, user: string): Promise<UserRow | undefined> {
  let localpart = user;
  if (user.startsWith('@')) {
    const userId = tryParseUserId(user);
    if (userId === undefined || serverNameOf(userId) !== serverName) return undefined;
    localpart = localpartOf(userId);
  }
  if (localpart === '' || localpart.includes(':')) return undefined;
  const exact = await findUser(db, `@${localpart}:${serverName}`);
  if (exact || localpart === localpart.toLowerCase()) return exact;
  return findUser(db, `@${localpart.toLowerCase()}:${serverName}`);
}
