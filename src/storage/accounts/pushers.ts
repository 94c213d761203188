// Pusher rows: one per user, app_id and pushkey. Devices' deletions remove theirs (devices.ts).

import type { Insertable, Kysely, Selectable } from 'kysely';
import type { PushersTable, Schema } from '../schema.js';

export type PusherRow = Selectable<PushersTable>;

export async function listPushers(db: Kysely<Schema>, userId: string): Promise<PusherRow[]> {
  return db.selectFrom('pushers').selectAll().where('user_id', '=', userId).orderBy('created_ts').orderBy('app_id').orderBy('pushkey').execute();
}

export async function findPusher(db: Kysely<Schema>, userId: string, appId: string, pushkey: string): Promise<PusherRow | undefined> {
  return db
    .selectFrom('pushers')
    .selectAll()
    .where('user_id', '=', userId)
    .where('app_id', '=', appId)
    .where('pushkey', '=', pushkey)
    .executeTakeFirst();
}

/** Creates the pusher, or replaces the one the user has for its app_id and pushkey. */
export async function upsertPusher(db: Kysely<Schema>, row: Insertable<PushersTable>): Promise<void> {
  await db
    .insertInto('pushers')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['user_id', 'app_id', 'pushkey']).doUpdateSet({
        kind: row.kind,
        app_display_name: row.app_display_name,
        device_display_name: row.device_display_name,
        profile_tag: row.profile_tag,
        lang: row.lang,
        data_json: row.data_json,
        device_id: row.device_id ?? null,
      }),
    )
    .execute();
}

export async function deletePusher(db: Kysely<Schema>, userId: string, appId: string, pushkey: string): Promise<void> {
  await db.deleteFrom('pushers').where('user_id', '=', userId).where('app_id', '=', appId).where('pushkey', '=', pushkey).execute();
}

/** Removes other users' pushers for this app_id and pushkey (the pushkey moved to a new user). */
export async function deleteOthersPushers(db: Kysely<Schema>, appId: string, pushkey: string, keepUserId: string): Promise<void> {
  await db.deleteFrom('pushers').where('app_id', '=', appId).where('pushkey', '=', pushkey).where('user_id', '!=', keepUserId).execute();
}
