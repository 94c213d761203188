// Access-token rows, stored by the SHA-256 of the token.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface TokenOwner {
  readonly tokenId: number;
  readonly userId: string;
  readonly deviceId: string;
  readonly validUntilTs: number | null;
  readonly isAdmin: boolean;
  readonly isGuest: boolean;
  readonly deactivated: boolean;
}

export async function insertAccessToken(
  db: Kysely<Schema>,
  tokenHash: string,
  userId: string,
  deviceId: string,
  createdTs: number,
  validUntilTs: number | null = null,
): Promise<number> {
  const row = await db
    .insertInto('access_tokens')
    .values({ token_hash: tokenHash, user_id: userId, device_id: deviceId, created_ts: createdTs, valid_until_ts: validUntilTs })
    .returning('token_id')
    .executeTakeFirstOrThrow();
  return Number(row.token_id);
}

/** The token's owner with the account flags that authentication needs, in one query. */
export async function findTokenOwner(db: Kysely<Schema>, tokenHash: string): Promise<TokenOwner | undefined> {
  const row = await db
    .selectFrom('access_tokens as t')
    .innerJoin('users as u', 'u.user_id', 't.user_id')
    .select(['t.token_id', 't.user_id', 't.device_id', 't.valid_until_ts', 'u.is_admin', 'u.is_guest', 'u.deactivated'])
    .where('t.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    tokenId: Number(row.token_id),
    userId: row.user_id,
    deviceId: row.device_id,
    validUntilTs: row.valid_until_ts === null ? null : Number(row.valid_until_ts),
    isAdmin: row.is_admin === 1,
    isGuest: row.is_guest === 1,
    deactivated: row.deactivated === 1,
  };
}

export async function deleteAccessToken(db: Kysely<Schema>, tokenId: number): Promise<void> {
  await db.deleteFrom('access_tokens').where('token_id', '=', tokenId).execute();
}

export async function deleteDeviceTokens(db: Kysely<Schema>, userId: string, deviceId: string): Promise<number> {
  const res = await db
    .deleteFrom('access_tokens')
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Deletes every token of the user but `exceptTokenId`. */
export async function deleteUserTokensExcept(db: Kysely<Schema>, userId: string, exceptTokenId: number | null): Promise<void> {
  let q = db.deleteFrom('access_tokens').where('user_id', '=', userId);
  if (exceptTokenId !== null) q = q.where('token_id', '!=', exceptTokenId);
  await q.execute();
}
