// Uploaded filters. The same filter uploaded twice by one user keeps its first id.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

/** Stores the filter (or finds its twin) and returns its numeric id. */
export async function insertFilter(db: Kysely<Schema>, userId: string, hash: string, json: string): Promise<number> {
  const existing = await db
    .selectFrom('filters')
    .select('filter_id')
    .where('user_id', '=', userId)
    .where('filter_hash', '=', hash)
    .executeTakeFirst();
  if (existing) return Number(existing.filter_id);
  const row = await db
    .insertInto('filters')
    .values({ user_id: userId, filter_hash: hash, filter_json: json })
    .onConflict((oc) => oc.columns(['user_id', 'filter_hash']).doUpdateSet({ filter_json: json }))
    .returning('filter_id')
    .executeTakeFirstOrThrow();
  return Number(row.filter_id);
}

export async function selectFilter(db: Kysely<Schema>, userId: string, filterId: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('filters')
    .select('filter_json')
    .where('user_id', '=', userId)
    .where('filter_id', '=', filterId)
    .executeTakeFirst();
  return row?.filter_json;
}
