// Device keys, one-time keys and fallback keys of local devices.

import { sql, type Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';
import { deleteSignaturesMadeWith, deleteSignaturesOn } from './cross-signing.js';

const IDS_PER_STATEMENT = 500;

export interface StoredKey {
  readonly algorithm: string;
  readonly keyId: string;
  /** The key as uploaded: a string or a signed object. */
  readonly key: string | JsonObject;
}

/** The device's keys object, or undefined if it has uploaded none. */
export async function selectDeviceKeys(db: Kysely<Schema>, userId: string, deviceId: string): Promise<JsonObject | undefined> {
  const row = await db.selectFrom('device_keys').select('key_json').where('user_id', '=', userId).where('device_id', '=', deviceId).executeTakeFirst();
  return row === undefined ? undefined : (JSON.parse(row.key_json) as JsonObject);
}

export async function upsertDeviceKeys(db: Kysely<Schema>, userId: string, deviceId: string, keys: JsonObject): Promise<void> {
  const key_json = JSON.stringify(keys);
  await db
    .insertInto('device_keys')
    .values({ user_id: userId, device_id: deviceId, key_json })
    .onConflict((oc) => oc.columns(['user_id', 'device_id']).doUpdateSet({ key_json }))
    .execute();
}

/**
 * The keys of these users' devices that are still registered, with the devices' display names;
 * `deviceIds` undefined means every device of the user.
 */
export async function selectKeysOfDevices(
  db: Kysely<Schema>,
  userId: string,
  deviceIds: readonly string[] | undefined,
): Promise<{ deviceId: string; keys: JsonObject; displayName: string | null }[]> {
  if (deviceIds !== undefined && deviceIds.length === 0) return [];
  const out: { deviceId: string; keys: JsonObject; displayName: string | null }[] = [];
  const batches = deviceIds === undefined ? [undefined] : chunks(deviceIds);
  for (const batch of batches) {
    let q = db
      .selectFrom('device_keys as k')
      .innerJoin('devices as d', (j) => j.onRef('d.user_id', '=', 'k.user_id').onRef('d.device_id', '=', 'k.device_id'))
      .select(['k.device_id', 'k.key_json', 'd.display_name'])
      .where('k.user_id', '=', userId);
    if (batch !== undefined) q = q.where('k.device_id', 'in', batch);
    for (const r of await q.execute()) out.push({ deviceId: r.device_id, keys: JSON.parse(r.key_json) as JsonObject, displayName: r.display_name });
  }
  return out;
}

/** The key ids of these one-time keys that the device has already, with their JSON. */
export async function selectExistingOneTimeKeys(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  keys: readonly StoredKey[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const batch of chunks(keys)) {
    const rows = await db
      .selectFrom('one_time_keys')
      .select(['algorithm', 'key_id', 'key_json'])
      .where('user_id', '=', userId)
      .where('device_id', '=', deviceId)
      .where('key_id', 'in', batch.map((k) => k.keyId))
      .execute();
    for (const r of rows) out.set(`${r.algorithm}:${r.key_id}`, r.key_json);
  }
  return out;
}

export async function insertOneTimeKeys(db: Kysely<Schema>, userId: string, deviceId: string, keys: readonly StoredKey[]): Promise<void> {
  for (const batch of chunks(keys, 200)) {
    await db
      .insertInto('one_time_keys')
      .values(batch.map((k) => ({ user_id: userId, device_id: deviceId, algorithm: k.algorithm, key_id: k.keyId, key_json: JSON.stringify(k.key) })))
      .onConflict((oc) => oc.columns(['user_id', 'device_id', 'algorithm', 'key_id']).doNothing())
      .execute();
  }
}

/** Sets the device's fallback key for the key's algorithm; an identical key keeps its used flag. */
export async function upsertFallbackKey(db: Kysely<Schema>, userId: string, deviceId: string, key: StoredKey): Promise<void> {
  const key_json = JSON.stringify(key.key);
  const existing = await db
    .selectFrom('fallback_keys')
    .select(['key_id', 'key_json'])
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .where('algorithm', '=', key.algorithm)
    .executeTakeFirst();
  if (existing?.key_id === key.keyId && existing.key_json === key_json) return;
  await db
    .insertInto('fallback_keys')
    .values({ user_id: userId, device_id: deviceId, algorithm: key.algorithm, key_id: key.keyId, key_json, used: 0 })
    .onConflict((oc) => oc.columns(['user_id', 'device_id', 'algorithm']).doUpdateSet({ key_id: key.keyId, key_json, used: 0 }))
    .execute();
}

/**
 * What sync and /keys/upload report: per algorithm, how many one-time keys the device has left,
 * and the algorithms of its unused fallback keys. One statement.
 */
export async function selectKeyCounts(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
): Promise<{ oneTimeKeys: Record<string, number>; unusedFallbacks: string[] }> {
  const { rows } = await sql<{ kind: string; algorithm: string; n: number | string }>`
    select 'otk' as kind, algorithm, count(*) as n from one_time_keys where user_id = ${userId} and device_id = ${deviceId} group by algorithm
    union all
    select 'fallback' as kind, algorithm, 0 as n from fallback_keys where user_id = ${userId} and device_id = ${deviceId} and used = 0
  `.execute(db);
  const oneTimeKeys: Record<string, number> = {};
  const unusedFallbacks: string[] = [];
  for (const r of rows) {
    if (r.kind === 'otk') oneTimeKeys[r.algorithm] = Number(r.n);
    else unusedFallbacks.push(r.algorithm);
  }
  unusedFallbacks.sort();
  return { oneTimeKeys, unusedFallbacks };
}

/** Takes one one-time key of the algorithm away from the device, or undefined if it has none left. */
export async function takeOneTimeKey(db: Kysely<Schema>, userId: string, deviceId: string, algorithm: string): Promise<StoredKey | undefined> {
  // Another claim may take the same key first: then try the next one.
  for (let attempt = 0; attempt < 25; attempt++) {
    const row = await db
      .selectFrom('one_time_keys')
      .select(['key_id', 'key_json'])
      .where('user_id', '=', userId)
      .where('device_id', '=', deviceId)
      .where('algorithm', '=', algorithm)
      .orderBy('key_id')
      .limit(1)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const res = await db
      .deleteFrom('one_time_keys')
      .where('user_id', '=', userId)
      .where('device_id', '=', deviceId)
      .where('algorithm', '=', algorithm)
      .where('key_id', '=', row.key_id)
      .executeTakeFirst();
    if (Number(res.numDeletedRows) === 1) return { algorithm, keyId: row.key_id, key: JSON.parse(row.key_json) as string | JsonObject };
  }
  return undefined;
}

/** The device's fallback key of the algorithm, marked used; undefined if it has none. */
export async function useFallbackKey(db: Kysely<Schema>, userId: string, deviceId: string, algorithm: string): Promise<StoredKey | undefined> {
  const row = await db
    .selectFrom('fallback_keys')
    .select(['key_id', 'key_json', 'used'])
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .where('algorithm', '=', algorithm)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  if (row.used === 0) {
    await db
      .updateTable('fallback_keys')
      .set({ used: 1 })
      .where('user_id', '=', userId)
      .where('device_id', '=', deviceId)
      .where('algorithm', '=', algorithm)
      .execute();
  }
  return { algorithm, keyId: row.key_id, key: JSON.parse(row.key_json) as string | JsonObject };
}

/** Removes every key of these devices (they were deleted), the signatures on them and those they made. */
export async function deleteKeysOfDevices(db: Kysely<Schema>, userId: string, deviceIds: readonly string[]): Promise<void> {
  for (const batch of chunks(deviceIds)) {
    for (const table of ['device_keys', 'one_time_keys', 'fallback_keys'] as const) {
      await db.deleteFrom(table).where('user_id', '=', userId).where('device_id', 'in', batch).execute();
    }
    await deleteSignaturesOn(db, userId, batch);
    await deleteSignaturesMadeWith(db, userId, batch.map((d) => `ed25519:${d}`));
  }
}

function chunks<T>(items: readonly T[], size = IDS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
