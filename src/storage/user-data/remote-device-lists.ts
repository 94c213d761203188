// Other servers' users' device lists as this server keeps them (migration 015): one row per user
// in remote_device_lists, one per device in remote_devices. A list is replaced whole when fetched
// again, and changed a device at a time by the updates that follow it.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

const ROWS_PER_STATEMENT = 200;

export interface KeptDevice {
  readonly deviceId: string;
  /** The device keys; null when the device has none. */
  readonly keys: JsonObject | null;
  readonly displayName: string | null;
}

export interface KeptDeviceList {
  readonly streamId: number;
  readonly stale: boolean;
  /** Since when the user had shared a room with ours when the list was fetched (events-stream position). */
  readonly sharedSince: number;
  readonly masterKey: JsonObject | undefined;
  readonly selfSigningKey: JsonObject | undefined;
}

/** A user's whole list, as their server gave it. */
export interface FetchedDeviceList {
  readonly streamId: number;
  readonly devices: readonly KeptDevice[];
  readonly masterKey?: JsonObject | undefined;
  readonly selfSigningKey?: JsonObject | undefined;
}

const parsed = (json: string | null): JsonObject | undefined => (json === null ? undefined : (JSON.parse(json) as JsonObject));

export async function selectKeptDeviceList(db: Kysely<Schema>, userId: string): Promise<KeptDeviceList | undefined> {
  const row = await db.selectFrom('remote_device_lists').selectAll().where('user_id', '=', userId).executeTakeFirst();
  if (row === undefined) return undefined;
  return {
    streamId: Number(row.stream_id),
    stale: row.stale === 1,
    sharedSince: Number(row.shared_since),
    masterKey: parsed(row.master_key),
    selfSigningKey: parsed(row.self_signing_key),
  };
}

/** The user's kept devices; `deviceIds` undefined means all of them. */
export async function selectKeptDevices(db: Kysely<Schema>, userId: string, deviceIds: readonly string[] | undefined): Promise<KeptDevice[]> {
  if (deviceIds !== undefined && deviceIds.length === 0) return [];
  const out: KeptDevice[] = [];
  const batches = deviceIds === undefined ? [undefined] : chunks([...new Set(deviceIds)]);
  for (const batch of batches) {
    let q = db.selectFrom('remote_devices').select(['device_id', 'key_json', 'display_name']).where('user_id', '=', userId);
    if (batch !== undefined) q = q.where('device_id', 'in', batch);
    for (const r of await q.execute()) out.push({ deviceId: r.device_id, keys: parsed(r.key_json) ?? null, displayName: r.display_name });
  }
  return out;
}

/** Replaces the user's list with `list`, no longer stale (within the caller's transaction). */
export async function replaceKeptDeviceList(db: Kysely<Schema>, userId: string, list: FetchedDeviceList, sharedSince: number, now: number): Promise<void> {
  const row = {
    stream_id: list.streamId,
    stale: 0,
    shared_since: sharedSince,
    master_key: list.masterKey === undefined ? null : JSON.stringify(list.masterKey),
    self_signing_key: list.selfSigningKey === undefined ? null : JSON.stringify(list.selfSigningKey),
    updated_ts: now,
  };
  await db
    .insertInto('remote_device_lists')
    .values({ user_id: userId, ...row })
    .onConflict((oc) => oc.column('user_id').doUpdateSet(row))
    .execute();
  await db.deleteFrom('remote_devices').where('user_id', '=', userId).execute();
  for (const batch of chunks(list.devices)) {
    await db
      .insertInto('remote_devices')
      .values(batch.map((d) => ({ user_id: userId, device_id: d.deviceId, key_json: d.keys === null ? null : JSON.stringify(d.keys), display_name: d.displayName })))
      .onConflict((oc) => oc.columns(['user_id', 'device_id']).doNothing())
      .execute();
  }
}

/**
 * Moves the user's list on to `streamId` if it is kept, not stale, not past `streamId`, and at or
 * past `notBefore` (the newest change the update follows; undefined: none). Whether it did.
 */
export async function advanceKeptDeviceList(db: Kysely<Schema>, userId: string, streamId: number, notBefore: number | undefined, now: number): Promise<boolean> {
  let q = db
    .updateTable('remote_device_lists')
    .set({ stream_id: streamId, updated_ts: now })
    .where('user_id', '=', userId)
    .where('stale', '=', 0)
    .where('stream_id', '<=', streamId);
  if (notBefore !== undefined) q = q.where('stream_id', '>=', notBefore);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function upsertKeptDevice(db: Kysely<Schema>, userId: string, device: KeptDevice): Promise<void> {
  const row = { key_json: device.keys === null ? null : JSON.stringify(device.keys), display_name: device.displayName };
  await db
    .insertInto('remote_devices')
    .values({ user_id: userId, device_id: device.deviceId, ...row })
    .onConflict((oc) => oc.columns(['user_id', 'device_id']).doUpdateSet(row))
    .execute();
}

export async function deleteKeptDevice(db: Kysely<Schema>, userId: string, deviceId: string): Promise<void> {
  await db.deleteFrom('remote_devices').where('user_id', '=', userId).where('device_id', '=', deviceId).execute();
}

/** Marks the user's list stale; whether one is kept. */
export async function markKeptDeviceListStale(db: Kysely<Schema>, userId: string, now: number): Promise<boolean> {
  const res = await db.updateTable('remote_device_lists').set({ stale: 1, updated_ts: now }).where('user_id', '=', userId).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Sets the cross-signing keys given of a kept list (the others stay); whether one is kept. */
export async function updateKeptSigningKeys(
  db: Kysely<Schema>,
  userId: string,
  keys: { readonly masterKey?: JsonObject | undefined; readonly selfSigningKey?: JsonObject | undefined },
  now: number,
): Promise<boolean> {
  const res = await db
    .updateTable('remote_device_lists')
    .set({
      updated_ts: now,
      ...(keys.masterKey !== undefined ? { master_key: JSON.stringify(keys.masterKey) } : {}),
      ...(keys.selfSigningKey !== undefined ? { self_signing_key: JSON.stringify(keys.selfSigningKey) } : {}),
    })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Forgets the user's list (within the caller's transaction, or on its own). */
export async function deleteKeptDeviceList(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('remote_devices').where('user_id', '=', userId).execute();
  await db.deleteFrom('remote_device_lists').where('user_id', '=', userId).execute();
}

function chunks<T>(items: readonly T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
