// Devices: a user's logged-in clients. Each access token belongs to one; deleting a device
// revokes its tokens. Other parts (to-device inboxes, device keys) hear of deletions through
// the `onDevicesDeleted` hook, and of new or renamed devices through `onDeviceChanged` (the
// device_lists stream), both called after the change is committed.

import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import { deleteDeviceTokens } from '../storage/accounts/access-tokens.js';
import {
  deleteAllDevices,
  deleteDevices,
  findDevice,
  insertDevice,
  listDevices,
  renameDevice,
  type DeviceRow,
} from '../storage/accounts/devices.js';
import type { AccessTokenAuthenticator } from './authenticator.js';

export const MAX_DEVICE_DISPLAY_NAME_LENGTH = 100;
export const MAX_DEVICE_ID_LENGTH = 255;
const DEVICE_ID_LENGTH = 10;
const DEVICE_ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function newDeviceId(): string {
  let s = '';
  for (let i = 0; i < DEVICE_ID_LENGTH; i++) s += DEVICE_ID_ALPHABET[randomInt(DEVICE_ID_ALPHABET.length)];
  return s;
}

export interface DeviceInfo {
  readonly deviceId: string;
  readonly displayName: string | null;
  readonly lastSeenTs: number | null;
  readonly lastSeenIp: string | null;
}

function toInfo(row: DeviceRow): DeviceInfo {
  return {
    deviceId: row.device_id,
    displayName: row.display_name,
    lastSeenTs: row.last_seen_ts === null ? null : Number(row.last_seen_ts),
    lastSeenIp: row.last_seen_ip,
  };
}

export type DevicesDeletedHook = (userId: string, deviceIds: readonly string[]) => Promise<void> | void;
/** A device was created or renamed. */
export type DeviceChangedHook = (userId: string, deviceId: string) => Promise<void> | void;

export interface DevicesDeps {
  readonly db: Kysely<Schema>;
  readonly now: () => number;
  readonly tokens: AccessTokenAuthenticator;
  readonly onDevicesDeleted?: DevicesDeletedHook;
  readonly onDeviceChanged?: DeviceChangedHook;
}

export class Devices {
  constructor(private readonly deps: DevicesDeps) {}

  async list(userId: string): Promise<DeviceInfo[]> {
    return (await listDevices(this.deps.db, userId)).map(toInfo);
  }

  async get(userId: string, deviceId: string): Promise<DeviceInfo | undefined> {
    const row = await findDevice(this.deps.db, userId, deviceId);
    return row && toInfo(row);
  }

  /** Renames an existing device; false when the user has no such device. */
  async rename(userId: string, deviceId: string, displayName: string | null): Promise<boolean> {
    checkDisplayName(displayName);
    const renamed = await renameDevice(this.deps.db, userId, deviceId, displayName);
    if (renamed) await this.deps.onDeviceChanged?.(userId, deviceId);
    return renamed;
  }

  /** Creates a device for an appservice user; false when it exists already. */
  async create(userId: string, deviceId: string, displayName: string | null): Promise<boolean> {
    checkDeviceId(deviceId);
    checkDisplayName(displayName);
    const created = await insertDevice(this.deps.db, userId, deviceId, displayName, this.deps.now());
    if (created) await this.deps.onDeviceChanged?.(userId, deviceId);
    return created;
  }

  /**
   * Logs a client in on a device and issues its access token. A device ID the user already has is
   * reused, and that device's earlier tokens are revoked; otherwise the device is created (with a
   * fresh ID when none is asked for).
   */
  async startSession(
    userId: string,
    requested: { deviceId?: string | undefined; displayName?: string | undefined },
    validUntilTs: number | null = null,
  ): Promise<{ deviceId: string; accessToken: string }> {
    if (requested.deviceId !== undefined) checkDeviceId(requested.deviceId);
    const displayName = requested.displayName === undefined ? null : requested.displayName.slice(0, MAX_DEVICE_DISPLAY_NAME_LENGTH);
    let revoked = false;
    let created = true;
    const result = await this.deps.db.transaction().execute(async (trx) => {
      let deviceId = requested.deviceId;
      if (deviceId === undefined) {
        // Ten letters collide rarely; a collision just draws again.
        do {
          deviceId = newDeviceId();
        } while (!(await insertDevice(trx, userId, deviceId, displayName, this.deps.now())));
      } else if (!(await insertDevice(trx, userId, deviceId, displayName, this.deps.now()))) {
        created = false;
        revoked = (await deleteDeviceTokens(trx, userId, deviceId)) > 0;
      }
      const accessToken = await this.deps.tokens.issue(trx, userId, deviceId, validUntilTs);
      return { deviceId, accessToken };
    });
    if (revoked) this.deps.tokens.invalidateUser(userId);
    if (created) await this.deps.onDeviceChanged?.(userId, result.deviceId);
    return result;
  }

  /** Deletes these devices (unknown ones are skipped) and revokes their tokens; returns those deleted. */
  async delete(userId: string, deviceIds: readonly string[]): Promise<string[]> {
    const deleted = await this.deps.db.transaction().execute((trx) => deleteDevices(trx, userId, deviceIds));
    return this.afterDelete(userId, deleted);
  }

  /** Deletes every device of the user except `exceptDeviceId`; returns those deleted. */
  async deleteAll(userId: string, exceptDeviceId: string | null = null): Promise<string[]> {
    const deleted = await this.deps.db.transaction().execute((trx) => deleteAllDevices(trx, userId, exceptDeviceId));
    return this.afterDelete(userId, deleted);
  }

  /** What must follow a committed deletion of devices (also after deactivation). */
  async afterDelete(userId: string, deleted: string[]): Promise<string[]> {
    this.deps.tokens.invalidateUser(userId);
    if (deleted.length > 0) await this.deps.onDevicesDeleted?.(userId, deleted);
    return deleted;
  }
}

function checkDeviceId(deviceId: string): void {
  if (deviceId.length === 0 || deviceId.length > MAX_DEVICE_ID_LENGTH) {
    throw HearthError.invalidParam(`device_id must be 1 to ${MAX_DEVICE_ID_LENGTH} characters`);
  }
}

function checkDisplayName(displayName: string | null): void {
  if (displayName !== null && displayName.length > MAX_DEVICE_DISPLAY_NAME_LENGTH) {
    throw new HearthError(400, 'M_TOO_LARGE', `Device display name is too long (max ${MAX_DEVICE_DISPLAY_NAME_LENGTH})`);
  }
}
