// Profiles: display name and avatar of local users, with the lower-cased text the user
// directory searches.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface ProfileRow {
  readonly userId: string;
  readonly displayname: string | null;
  readonly avatarUrl: string | null;
}

/** What the directory matches: the localpart and display name, lower-cased and normalized. */
export function profileSearchKey(userId: string, displayname: string | null): string {
  const colon = userId.indexOf(':');
  const localpart = userId.slice(userId.startsWith('@') ? 1 : 0, colon > 0 ? colon : undefined);
  return `${localpart} ${displayname ?? ''}`.normalize('NFKC').toLowerCase();
}

export async function insertProfile(db: Kysely<Schema>, row: ProfileRow): Promise<void> {
  await db
    .insertInto('profiles')
    .values({
      user_id: row.userId,
      displayname: row.displayname,
      avatar_url: row.avatarUrl,
      search_key: profileSearchKey(row.userId, row.displayname),
    })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
}

export async function selectProfile(db: Kysely<Schema>, userId: string): Promise<ProfileRow | undefined> {
  const row = await db
    .selectFrom('profiles')
    .select(['user_id', 'displayname', 'avatar_url'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && { userId: row.user_id, displayname: row.displayname, avatarUrl: row.avatar_url };
}

/** Whether a local account exists. */
export async function accountExists(db: Kysely<Schema>, userId: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('user_id').where('user_id', '=', userId).executeTakeFirst();
  return row !== undefined;
}

/**
 * Writes one or both fields (creating the row if missing), leaving the other as it is so that
 * concurrent changes of different fields do not undo each other; returns the profile as stored.
 */
export async function updateProfile(
  db: Kysely<Schema>,
  userId: string,
  change: { displayname?: string | null; avatarUrl?: string | null },
): Promise<ProfileRow> {
  const set: { displayname?: string | null; avatar_url?: string | null; search_key?: string } = {};
  if (change.displayname !== undefined) {
    set.displayname = change.displayname;
    set.search_key = profileSearchKey(userId, change.displayname);
  }
  if (change.avatarUrl !== undefined) set.avatar_url = change.avatarUrl;
  await db
    .insertInto('profiles')
    .values({
      user_id: userId,
      displayname: change.displayname ?? null,
      avatar_url: change.avatarUrl ?? null,
      search_key: profileSearchKey(userId, change.displayname ?? null),
    })
    .onConflict((oc) => oc.column('user_id').doUpdateSet(set))
    .execute();
  return (await selectProfile(db, userId))!;
}

/** LIKE pattern for a substring, with the pattern characters escaped (ESCAPE '!'). */
function likeSubstring(word: string): string {
  return `%${word.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/**
 * Profiles whose search key holds every word, in user-ID order, after `afterUserId`, at most
 * `limit`. Deactivated and guest accounts are left out.
 */
export async function searchProfiles(
  db: Kysely<Schema>,
  words: readonly string[],
  afterUserId: string,
  limit: number,
): Promise<ProfileRow[]> {
  let q = db
    .selectFrom('profiles')
    .leftJoin('users', 'users.user_id', 'profiles.user_id')
    .select(['profiles.user_id', 'profiles.displayname', 'profiles.avatar_url'])
    .where((eb) => eb.or([eb('users.user_id', 'is', null), eb.and([eb('users.deactivated', '=', 0), eb('users.is_guest', '=', 0)])]))
    .where('profiles.user_id', '>', afterUserId);
  for (const word of words) {
    q = q.where(sql<boolean>`${sql.ref('profiles.search_key')} like ${likeSubstring(word)} escape '!'`);
  }
  const rows = await q.orderBy('profiles.user_id').limit(limit).execute();
  return rows.map((r) => ({ userId: r.user_id, displayname: r.displayname, avatarUrl: r.avatar_url }));
}
