// OpenID token rows, stored by the SHA-256 of the token. They are not access tokens: nothing
// but the federation userinfo check reads them.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export async function insertOpenIdToken(db: Kysely<Schema>, tokenHash: string, userId: string, validUntilTs: number): Promise<void> {
  await db.insertInto('openid_tokens').values({ token_hash: tokenHash, user_id: userId, valid_until_ts: validUntilTs }).execute();
}

/** The owner of an unexpired token, unless the account was deactivated since. */
export async function openIdTokenOwner(db: Kysely<Schema>, tokenHash: string, now: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('openid_tokens as t')
    .innerJoin('users as u', 'u.user_id', 't.user_id')
    .select('t.user_id')
    .where('t.token_hash', '=', tokenHash)
    .where('t.valid_until_ts', '>', now)
    .where('u.deactivated', '=', 0)
    .executeTakeFirst();
  return row?.user_id;
}

export async function deleteExpiredOpenIdTokens(db: Kysely<Schema>, now: number): Promise<void> {
  await db.deleteFrom('openid_tokens').where('valid_until_ts', '<=', now).execute();
}
