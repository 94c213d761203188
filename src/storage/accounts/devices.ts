// Device rows. Deleting a device also deletes its access tokens and its pushers (they have no
// foreign key to it), in the same transaction.

import type { Kysely, Selectable } from 'kysely';
import type { DevicesTable, Schema } from '../schema.js';

export type DeviceRow = Selectable<DevicesTable>;

/** Creates the device unless the user already has one with this ID; true when created. */
export async function insertDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  displayName: string | null,
  createdTs: number,
): Promise<boolean> {
  const row = await db
    .insertInto('devices')
    .values({ user_id: userId, device_id: deviceId, display_name: displayName, created_ts: createdTs, last_seen_ts: null, last_seen_ip: null, last_seen_user_agent: null })
    .onConflict((oc) => oc.columns(['user_id', 'device_id']).doNothing())
    .returning('device_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function findDevice(db: Kysely<Schema>, userId: string, deviceId: string): Promise<DeviceRow | undefined> {
  return db
    .selectFrom('devices')
    .selectAll()
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .executeTakeFirst();
}

export async function listDevices(db: Kysely<Schema>, userId: string): Promise<DeviceRow[]> {
  return db.selectFrom('devices').selectAll().where('user_id', '=', userId).orderBy('device_id').execute();
}

export async function renameDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  displayName: string | null,
): Promise<boolean> {
  const res = await db
    .updateTable('devices')
    .set({ display_name: displayName })
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function touchDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  ts: number,
  ip: string | null,
  userAgent: string | null,
): Promise<void> {
  await db
    .updateTable('devices')
    .set({ last_seen_ts: ts, last_seen_ip: ip, last_seen_user_agent: userAgent })
    .where('user_id', '=', userId)
    .where('device_id', '=', deviceId)
    .execute();
}

/** Deletes these devices of the user, their tokens and pushers; returns the IDs that existed. */
export async function deleteDevices(db: Kysely<Schema>, userId: string, deviceIds: readonly string[]): Promise<string[]> {
  if (deviceIds.length === 0) return [];
  await db.deleteFrom('access_tokens').where('user_id', '=', userId).where('device_id', 'in', deviceIds).execute();
  await db.deleteFrom('pushers').where('user_id', '=', userId).where('device_id', 'in', deviceIds).execute();
  const rows = await db
    .deleteFrom('devices')
    .where('user_id', '=', userId)
    .where('device_id', 'in', deviceIds)
    .returning('device_id')
    .execute();
  return rows.map((r) => r.device_id);
}

/**
 * Deletes every device of the user but `exceptDeviceId`, and their tokens and pushers (with no
 * exception, pushers set without a device too); returns the deleted IDs.
 */
export async function deleteAllDevices(
  db: Kysely<Schema>,
  userId: string,
  exceptDeviceId: string | null = null,
): Promise<string[]> {
  let tokens = db.deleteFrom('access_tokens').where('user_id', '=', userId);
  if (exceptDeviceId !== null) tokens = tokens.where('device_id', '!=', exceptDeviceId);
  await tokens.execute();
  let pushers = db.deleteFrom('pushers').where('user_id', '=', userId);
  if (exceptDeviceId !== null) pushers = pushers.where('device_id', '!=', exceptDeviceId);
  await pushers.execute();
  let devices = db.deleteFrom('devices').where('user_id', '=', userId);
  if (exceptDeviceId !== null) devices = devices.where('device_id', '!=', exceptDeviceId);
  const rows = await devices.returning('device_id').execute();
  return rows.map((r) => r.device_id);
}
