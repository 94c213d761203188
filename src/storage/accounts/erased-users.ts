// Erased users (migration 008): marked once, never unmarked; few enough to be read whole at start.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

/** Marks the user erased; marking twice keeps the first time. */
export async function markUserErased(db: Kysely<Schema>, userId: string, now: number): Promise<void> {
  await db
    .insertInto('erased_users')
    .values({ user_id: userId, erased_ts: now })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
}

export async function erasedUserIds(db: Kysely<Schema>): Promise<string[]> {
  return (await db.selectFrom('erased_users').select('user_id').execute()).map((r) => r.user_id);
}

export async function isErased(db: Kysely<Schema>, userId: string): Promise<boolean> {
  const row = await db.selectFrom('erased_users').select('user_id').where('user_id', '=', userId).executeTakeFirst();
  return row !== undefined;
}
