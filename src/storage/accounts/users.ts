// User rows: creation, lookup, password hashes, admin flag, deactivation.

import { sql, type Kysely, type Selectable } from 'kysely';
import type { Schema, UsersTable } from '../schema.js';

export type UserRow = Selectable<UsersTable>;

export interface NewUser {
  readonly userId: string;
  readonly localpart: string;
  readonly passwordHash: string | null;
  readonly isAdmin: boolean;
  readonly isGuest: boolean;
  readonly appserviceId?: string | null;
  readonly createdTs: number;
}

/** Inserts the user; false when the user ID or localpart is taken. */
export async function insertUser(db: Kysely<Schema>, user: NewUser): Promise<boolean> {
  const row = await db
    .insertInto('users')
    .values({
      user_id: user.userId,
      localpart: user.localpart,
      password_hash: user.passwordHash,
      is_admin: user.isAdmin ? 1 : 0,
      is_guest: user.isGuest ? 1 : 0,
      deactivated: 0,
      appservice_id: user.appserviceId ?? null,
      created_ts: user.createdTs,
    })
    .onConflict((oc) => oc.doNothing())
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function findUser(db: Kysely<Schema>, userId: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

export async function localpartTaken(db: Kysely<Schema>, localpart: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('user_id').where('localpart', '=', localpart).executeTakeFirst();
  return row !== undefined;
}

/** Sets the hash; with `current`, only while the stored hash is still that one (false otherwise). */
export async function setPasswordHash(db: Kysely<Schema>, userId: string, hash: string | null, current?: string): Promise<boolean> {
  let update = db.updateTable('users').set({ password_hash: hash }).where('user_id', '=', userId);
  if (current !== undefined) update = update.where('password_hash', '=', current);
  const res = await update.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function setAdmin(db: Kysely<Schema>, userId: string, admin: boolean): Promise<boolean> {
  const res = await db
    .updateTable('users')
    .set({ is_admin: admin ? 1 : 0 })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Marks the user deactivated and forgets the password; false when already deactivated or unknown. */
export async function markDeactivated(db: Kysely<Schema>, userId: string): Promise<boolean> {
  const res = await db
    .updateTable('users')
    .set({ deactivated: 1, password_hash: null })
    .where('user_id', '=', userId)
    .where('deactivated', '=', 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Reactivates a deactivated user with this password hash; false when not deactivated or unknown. */
export async function markReactivated(db: Kysely<Schema>, userId: string, passwordHash: string): Promise<boolean> {
  const res = await db
    .updateTable('users')
    .set({ deactivated: 0, password_hash: passwordHash })
    .where('user_id', '=', userId)
    .where('deactivated', '=', 1)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export interface UserCountOptions {
  readonly includeGuests?: boolean;
  readonly includeDeactivated?: boolean;
}

export async function countUsers(db: Kysely<Schema>, opts: UserCountOptions = {}): Promise<number> {
  let q = db.selectFrom('users').select(sql<number>`count(*)`.as('n'));
  if (!opts.includeGuests) q = q.where('is_guest', '=', 0);
  if (!opts.includeDeactivated) q = q.where('deactivated', '=', 0);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The next value of a named counter (1 for the first), inside the caller's transaction if any. */
export async function nextCounterValue(db: Kysely<Schema>, name: string): Promise<number> {
  const row = await db
    .insertInto('account_counters')
    .values({ name, value: 1 })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: sql<number>`account_counters.value + 1` }))
    .returning('value')
    .executeTakeFirstOrThrow();
  return Number(row.value);
}

/** Turns a guest into a full account with the password; false when it is no (active) guest. */
export async function upgradeGuestUser(db: Kysely<Schema>, userId: string, passwordHash: string): Promise<boolean> {
  const res = await db
    .updateTable('users')
    .set({ is_guest: 0, password_hash: passwordHash })
    .where('user_id', '=', userId)
    .where('is_guest', '=', 1)
    .where('deactivated', '=', 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}
