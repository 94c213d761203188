// Server-side key backups: each user's backup versions (numbered 1, 2, ... and never reused) and
// the room keys stored in them.

import { sql, type Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

const PAIRS_PER_STATEMENT = 250;
const ROWS_PER_INSERT = 100;

export interface BackupVersionRow {
  readonly version: number;
  readonly algorithm: string;
  readonly authData: JsonObject;
  readonly etag: number;
  readonly deleted: boolean;
}

export interface BackedUpKey {
  readonly firstMessageIndex: number;
  readonly forwardedCount: number;
  readonly isVerified: boolean;
  readonly sessionData: JsonObject;
}

export interface BackedUpKeyRow extends BackedUpKey {
  readonly roomId: string;
  readonly sessionId: string;
}

function versionRow(r: { version: number | string; algorithm: string; auth_data: string; etag: number | string; deleted: number }): BackupVersionRow {
  return {
    version: Number(r.version),
    algorithm: r.algorithm,
    authData: JSON.parse(r.auth_data) as JsonObject,
    etag: Number(r.etag),
    deleted: r.deleted === 1,
  };
}

/** The version with this number, deleted or not; undefined if it never existed. */
export async function selectBackupVersion(db: Kysely<Schema>, userId: string, version: number): Promise<BackupVersionRow | undefined> {
  const row = await db
    .selectFrom('backup_versions')
    .select(['version', 'algorithm', 'auth_data', 'etag', 'deleted'])
    .where('user_id', '=', userId)
    .where('version', '=', version)
    .executeTakeFirst();
  return row === undefined ? undefined : versionRow(row);
}

/** The user's current version: the newest one not deleted. */
export async function selectCurrentBackupVersion(db: Kysely<Schema>, userId: string): Promise<BackupVersionRow | undefined> {
  const row = await db
    .selectFrom('backup_versions')
    .select(['version', 'algorithm', 'auth_data', 'etag', 'deleted'])
    .where('user_id', '=', userId)
    .where('deleted', '=', 0)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : versionRow(row);
}

/** Adds a version numbered one above every version the user ever had; returns its number. */
export async function insertBackupVersion(db: Kysely<Schema>, userId: string, algorithm: string, authData: JsonObject): Promise<number> {
  const row = await db
    .selectFrom('backup_versions')
    .select((eb) => eb.fn.max('version').as('v'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const version = Number(row?.v ?? 0) + 1;
  await db
    .insertInto('backup_versions')
    .values({ user_id: userId, version, algorithm, auth_data: JSON.stringify(authData), etag: 0, deleted: 0 })
    .execute();
  return version;
}

export async function updateBackupAuthData(db: Kysely<Schema>, userId: string, version: number, authData: JsonObject): Promise<void> {
  await db
    .updateTable('backup_versions')
    .set({ auth_data: JSON.stringify(authData) })
    .where('user_id', '=', userId)
    .where('version', '=', version)
    .execute();
}

export async function setBackupEtag(db: Kysely<Schema>, userId: string, version: number, etag: number): Promise<void> {
  await db.updateTable('backup_versions').set({ etag }).where('user_id', '=', userId).where('version', '=', version).execute();
}

/** Marks the version deleted and removes its keys. */
export async function markBackupVersionDeleted(db: Kysely<Schema>, userId: string, version: number): Promise<void> {
  await db.deleteFrom('backup_keys').where('user_id', '=', userId).where('version', '=', version).execute();
  await db.updateTable('backup_versions').set({ deleted: 1 }).where('user_id', '=', userId).where('version', '=', version).execute();
}

/** Every version and key of the user (the account was deactivated). */
export async function deleteAllBackups(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('backup_keys').where('user_id', '=', userId).execute();
  await db.deleteFrom('backup_versions').where('user_id', '=', userId).execute();
}

export async function countBackupKeys(db: Kysely<Schema>, userId: string, version: number): Promise<number> {
  const row = await db
    .selectFrom('backup_keys')
    .select(sql<number | string>`count(*)`.as('n'))
    .where('user_id', '=', userId)
    .where('version', '=', version)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

type KeyColumns = {
  room_id: string;
  session_id: string;
  first_message_index: number | string;
  forwarded_count: number | string;
  is_verified: number;
  session_data: string;
};

function keyRow(r: KeyColumns): BackedUpKeyRow {
  return {
    roomId: r.room_id,
    sessionId: r.session_id,
    firstMessageIndex: Number(r.first_message_index),
    forwardedCount: Number(r.forwarded_count),
    isVerified: r.is_verified === 1,
    sessionData: JSON.parse(r.session_data) as JsonObject,
  };
}

const KEY_COLUMNS = ['room_id', 'session_id', 'first_message_index', 'forwarded_count', 'is_verified', 'session_data'] as const;

/** The version's keys: all, a room's, or one session's. */
export async function selectBackupKeys(
  db: Kysely<Schema>,
  userId: string,
  version: number,
  roomId?: string,
  sessionId?: string,
): Promise<BackedUpKeyRow[]> {
  let q = db.selectFrom('backup_keys').select(KEY_COLUMNS).where('user_id', '=', userId).where('version', '=', version);
  if (roomId !== undefined) q = q.where('room_id', '=', roomId);
  if (sessionId !== undefined) q = q.where('session_id', '=', sessionId);
  return (await q.execute()).map(keyRow);
}

/** The stored keys of these (room, session) pairs, keyed `room\0session`. */
export async function selectBackupKeysOf(
  db: Kysely<Schema>,
  userId: string,
  version: number,
  pairs: readonly (readonly [string, string])[],
): Promise<Map<string, BackedUpKeyRow>> {
  const out = new Map<string, BackedUpKeyRow>();
  for (let i = 0; i < pairs.length; i += PAIRS_PER_STATEMENT) {
    const batch = pairs.slice(i, i + PAIRS_PER_STATEMENT);
    const rows = await db
      .selectFrom('backup_keys')
      .select(KEY_COLUMNS)
      .where('user_id', '=', userId)
      .where('version', '=', version)
      .where(({ eb, refTuple, tuple }) => eb(refTuple('room_id', 'session_id'), 'in', batch.map(([r, s]) => tuple(r, s))))
      .execute();
    for (const r of rows) out.set(backupKeyId(r.room_id, r.session_id), keyRow(r));
  }
  return out;
}

export function backupKeyId(roomId: string, sessionId: string): string {
  return `${roomId}\u0000${sessionId}`;
}

/** Inserts the keys, replacing those stored for the same sessions. */
export async function upsertBackupKeys(db: Kysely<Schema>, userId: string, version: number, keys: readonly BackedUpKeyRow[]): Promise<void> {
  for (let i = 0; i < keys.length; i += ROWS_PER_INSERT) {
    await db
      .insertInto('backup_keys')
      .values(
        keys.slice(i, i + ROWS_PER_INSERT).map((k) => ({
          user_id: userId,
          version,
          room_id: k.roomId,
          session_id: k.sessionId,
          first_message_index: k.firstMessageIndex,
          forwarded_count: k.forwardedCount,
          is_verified: k.isVerified ? 1 : 0,
          session_data: JSON.stringify(k.sessionData),
        })),
      )
      .onConflict((oc) =>
        oc.columns(['user_id', 'version', 'room_id', 'session_id']).doUpdateSet((eb) => ({
          first_message_index: eb.ref('excluded.first_message_index'),
          forwarded_count: eb.ref('excluded.forwarded_count'),
          is_verified: eb.ref('excluded.is_verified'),
          session_data: eb.ref('excluded.session_data'),
        })),
      )
      .execute();
  }
}

/** Removes the version's keys: all, a room's, or one session's. */
export async function deleteBackupKeys(db: Kysely<Schema>, userId: string, version: number, roomId?: string, sessionId?: string): Promise<void> {
  let q = db.deleteFrom('backup_keys').where('user_id', '=', userId).where('version', '=', version);
  if (roomId !== undefined) q = q.where('room_id', '=', roomId);
  if (sessionId !== undefined) q = q.where('session_id', '=', sessionId);
  await q.execute();
}
