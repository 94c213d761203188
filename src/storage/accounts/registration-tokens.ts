// Registration-token rows. A use is counted when a registration completes, in the same
// transaction that creates the account, so a token never admits more accounts than it allows.

import { sql, type Kysely, type Selectable } from 'kysely';
import type { RegistrationTokensTable, Schema } from '../schema.js';

export type RegistrationTokenRow = Selectable<RegistrationTokensTable>;

export async function insertRegistrationToken(db: Kysely<Schema>, row: RegistrationTokenRow): Promise<boolean> {
  const inserted = await db
    .insertInto('registration_tokens')
    .values(row)
    .onConflict((oc) => oc.column('token').doNothing())
    .returning('token')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function findRegistrationToken(db: Kysely<Schema>, token: string): Promise<RegistrationTokenRow | undefined> {
  const row = await db.selectFrom('registration_tokens').selectAll().where('token', '=', token).executeTakeFirst();
  return row && normalize(row);
}

export async function listRegistrationTokens(db: Kysely<Schema>): Promise<RegistrationTokenRow[]> {
  const rows = await db.selectFrom('registration_tokens').selectAll().orderBy('created_ts').orderBy('token').execute();
  return rows.map(normalize);
}

export async function deleteRegistrationToken(db: Kysely<Schema>, token: string): Promise<boolean> {
  const res = await db.deleteFrom('registration_tokens').where('token', '=', token).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** Deletes the admin-granting tokens nobody has used yet. */
export async function deleteUnusedAdminTokens(db: Kysely<Schema>): Promise<number> {
  const res = await db
    .deleteFrom('registration_tokens')
    .where('makes_admin', '=', 1)
    .where('completed', '=', 0)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Whether any token could admit a registration at `now`. */
export async function anyUsableRegistrationToken(db: Kysely<Schema>, now: number): Promise<boolean> {
  const row = await db
    .selectFrom('registration_tokens')
    .select('token')
    .where((eb) => eb.or([eb('uses_allowed', 'is', null), eb('completed', '<', eb.ref('uses_allowed'))]))
    .where((eb) => eb.or([eb('expiry_time', 'is', null), eb('expiry_time', '>', now)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Counts one use of the token if it is still valid at `now`; returns the token's row as it was,
 * or undefined when it is unknown, used up or expired.
 */
export async function consumeRegistrationToken(
  db: Kysely<Schema>,
  token: string,
  now: number,
): Promise<RegistrationTokenRow | undefined> {
  const row = await db
    .updateTable('registration_tokens')
    .set({ completed: sql<number>`completed + 1` })
    .where('token', '=', token)
    .where((eb) => eb.or([eb('uses_allowed', 'is', null), eb('completed', '<', eb.ref('uses_allowed'))]))
    .where((eb) => eb.or([eb('expiry_time', 'is', null), eb('expiry_time', '>', now)]))
    .returningAll()
    .executeTakeFirst();
  return row && normalize(row);
}

function normalize(row: RegistrationTokenRow): RegistrationTokenRow {
  return {
    token: row.token,
    uses_allowed: row.uses_allowed === null ? null : Number(row.uses_allowed),
    completed: Number(row.completed),
    expiry_time: row.expiry_time === null ? null : Number(row.expiry_time),
    makes_admin: Number(row.makes_admin),
    created_ts: Number(row.created_ts),
  };
}

/** Changes a token's limits; the row after the change, or undefined when there is no such token. */
export async function updateRegistrationToken(
  db: Kysely<Schema>,
  token: string,
  change: { uses_allowed?: number | null; expiry_time?: number | null },
): Promise<RegistrationTokenRow | undefined> {
  if (change.uses_allowed === undefined && change.expiry_time === undefined) return findRegistrationToken(db, token);
  const row = await db.updateTable('registration_tokens').set(change).where('token', '=', token).returningAll().executeTakeFirst();
  return row && normalize(row);
}
