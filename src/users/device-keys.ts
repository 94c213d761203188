// End-to-end encryption keys of local devices: device keys, one-time keys and fallback keys
// (upload, query, claim), and the device_lists stream that tells the users sharing a room with a
// user when that user's devices or keys change. /keys/query also carries what cross-signing
// (users/cross-signing.ts) adds. Other servers' users' keys are answered from the copy kept of
// their device lists (users/remote-device-lists.ts) when it is current, else asked of their
// servers through the `remoteKeys` port (federation/remote-keys.ts), when there is one. Changes of
// local users are told to the other servers in their rooms through the `outbound` port; other
// servers' news of their users updates the copy and goes on the same stream.

import type { Kysely } from 'kysely';
import { canonicalJson } from '../protocol/canonical-json.js';
import { HearthError } from '../protocol/errors.js';
import { parseUserId, serverNameOf } from '../protocol/ids.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import {
  deleteKeysOfDevices,
  insertOneTimeKeys,
  selectDeviceKeys,
  selectExistingOneTimeKeys,
  selectKeyCounts,
  selectKeysOfDevices,
  takeOneTimeKey,
  upsertDeviceKeys,
  upsertFallbackKey,
  useFallbackKey,
  type StoredKey,
} from '../storage/user-data/device-keys.js';
import { insertDeviceListChange } from '../storage/user-data/device-lists.js';
import type { StreamBus } from '../streams/bus.js';
import type { CrossSigningService } from './cross-signing.js';
import type { DeviceChange, RemoteDeviceLists, SigningKeysChange } from './remote-device-lists.js';

/** Clients older than fallback keys look for this count, so it is always reported. */
const DEFAULT_COUNTED_ALGORITHM = 'signed_curve25519';
const MAX_KEYS_PER_UPLOAD = 1000;
const MAX_QUERIED_USERS = 1000;
const MAX_CLAIMED_DEVICES = 1000;
const COUNTS_KEPT = 50_000;
/** How long other servers are waited for unless the request says (`timeout`), and the most it may say. */
const DEFAULT_REMOTE_TIMEOUT_MS = 10_000;
const MAX_REMOTE_TIMEOUT_MS = 60_000;

export interface KeyCounts {
  readonly oneTimeKeys: Record<string, number>;
  readonly unusedFallbacks: readonly string[];
}

/** What a server that could not be asked, or did not answer, is reported as: `{status, message}`. */
export type RemoteKeyFailures = Record<string, JsonObject>;

/**
 * Other servers' users' keys, asked of their servers. Answers hold only the users and devices
 * asked; a server that cannot be asked or does not answer in time is one of the failures (these
 * never reject for it).
 */
export interface RemoteKeys {
  /** Device keys and cross-signing keys: server → user → device IDs (none: every device). */
  query(
    wanted: ReadonlyMap<string, Record<string, string[]>>,
    timeoutMs: number,
  ): Promise<{
    device_keys: Record<string, Record<string, JsonObject>>;
    master_keys: Record<string, JsonObject>;
    self_signing_keys: Record<string, JsonObject>;
    failures: RemoteKeyFailures;
  }>;
  /** One-time keys: server → user → device → algorithm. */
  claim(
    wanted: ReadonlyMap<string, Record<string, Record<string, string>>>,
    timeoutMs: number,
  ): Promise<{ one_time_keys: Record<string, Record<string, JsonObject>>; failures: RemoteKeyFailures }>;
}

/**
 * News of local users' device and cross-signing key changes for the other servers sharing a room
 * with them (federation/device-list-edus.ts). Called with the change's transaction, so that a
 * committed change is never left untold; returns the servers to `send` to once it commits.
 */
export interface DeviceListOutbound {
  /** These devices (every device of the user when undefined) changed at `position`: created, renamed, deleted, or their keys. */
  devicesChanged(trx: Kysely<Schema>, userId: string, deviceIds: readonly string[] | undefined, position: number): Promise<readonly string[]>;
  /** The user's master or self-signing key changed, or the signatures on the master key. */
  signingKeysChanged(trx: Kysely<Schema>, userId: string): Promise<readonly string[]>;
  send(destinations: readonly string[]): void;
}

/** `timeout` given outside the body (Synapse reads it from the query string). */
export interface RemoteWait {
  readonly timeoutMs?: number;
}

export interface DeviceKeyServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly serverName: string;
  /** Every user joined to a room the user is joined to (the user included). */
  readonly usersSharingRooms: (userId: string) => Promise<Set<string>>;
  /** Cross-signing keys and signatures for /keys/query; without it, none are reported. */
  readonly crossSigning?: Pick<CrossSigningService, 'keysForQuery'>;
  /** Other servers' users' keys; without it (federation off), their servers are reported as failures. */
  readonly remoteKeys?: RemoteKeys;
  /** The copy of other servers' users' device lists; without it, their servers are asked each time. */
  readonly remoteDeviceLists?: Pick<RemoteDeviceLists, 'query' | 'deviceChanged' | 'signingKeysChanged'>;
  /** Other servers are told of local users' changes; without it (federation off), nobody is. */
  readonly outbound?: DeviceListOutbound;
}

/** A change on the device_lists stream and the servers its news was queued for. */
interface RecordedChange {
  readonly position: number;
  readonly destinations: readonly string[];
}

export interface KeyRequester {
  readonly userId: string;
  readonly deviceId: string | null;
}

export class DeviceKeyService {
  /** Key counts per device, for every sync; dropped whenever the device's keys change. */
  private readonly counts = new Map<string, KeyCounts>();

  constructor(private readonly deps: DeviceKeyServiceDeps) {}

  /** POST /keys/upload: device keys, one-time keys and fallback keys of the requester's device. */
  async upload(requester: KeyRequester, body: JsonObject): Promise<{ one_time_key_counts: Record<string, number> }> {
    const { userId } = requester;
    const deviceId = requester.deviceId;
    if (deviceId === null) throw HearthError.invalidParam('Keys can only be uploaded with a device');
    const deviceKeys = body['device_keys'];
    // Absent means no new device keys; null is no DeviceKeys object (Synapse refuses it too).
    if (deviceKeys === null) throw HearthError.invalidParam("'device_keys' must be an object when present");
    if (deviceKeys !== undefined) checkDeviceKeys(deviceKeys, userId, deviceId);
    const oneTimeKeys = keyList(body['one_time_keys'], 'one_time_keys');
    const fallbackKeys = keyList(body['fallback_keys'] ?? body['org.matrix.msc2732.fallback_keys'], 'fallback_keys');
    if (oneTimeKeys.length + fallbackKeys.length > MAX_KEYS_PER_UPLOAD) throw HearthError.tooLarge(`At most ${MAX_KEYS_PER_UPLOAD} keys per upload`);
    const fallbackAlgorithms = new Set<string>();
    for (const k of fallbackKeys) {
      if (fallbackAlgorithms.has(k.algorithm)) throw HearthError.invalidParam(`Only one fallback key per algorithm (${k.algorithm})`);
      fallbackAlgorithms.add(k.algorithm);
    }

    const change = await this.deps.db.transaction().execute(async (trx) => {
      let changed = false;
      if (isJsonObject(deviceKeys)) {
        const existing = await selectDeviceKeys(trx, userId, deviceId);
        if (existing === undefined || sameJson(existing, deviceKeys) === false) {
          await upsertDeviceKeys(trx, userId, deviceId, deviceKeys);
          changed = true;
        }
      }
      if (oneTimeKeys.length > 0) {
        const existing = await selectExistingOneTimeKeys(trx, userId, deviceId, oneTimeKeys);
        const fresh: StoredKey[] = [];
        for (const k of oneTimeKeys) {
          const old = existing.get(`${k.algorithm}:${k.keyId}`);
          if (old === undefined) fresh.push(k);
          else if (!sameJson(JSON.parse(old) as JsonValue, k.key)) {
            throw HearthError.invalidParam(`One time key ${k.algorithm}:${k.keyId} already exists with different content`);
          }
        }
        await insertOneTimeKeys(trx, userId, deviceId, fresh);
      }
      for (const k of fallbackKeys) await upsertFallbackKey(trx, userId, deviceId, k);
      return changed ? this.recordChange(trx, userId, [deviceId]) : undefined;
    });
    this.counts.delete(countKey(userId, deviceId));
    if (change !== undefined) await this.announce(userId, change);
    const counts = await this.keyCounts(userId, deviceId);
    return { one_time_key_counts: counts.oneTimeKeys };
  }

  /**
   * POST /keys/query: the device keys of users' devices and their cross-signing keys, with the
   * signatures `requester` may see. Each other server named is asked once, all at the same time.
   */
  async query(requester: KeyRequester, body: JsonObject, wait: RemoteWait = {}): Promise<JsonObject> {
    const timeoutMs = remoteTimeout(body, wait);
    const wanted = body['device_keys'];
    if (!isJsonObject(wanted)) throw HearthError.badJson("'device_keys' must be an object");
    const entries = Object.entries(wanted);
    if (entries.length > MAX_QUERIED_USERS) throw HearthError.tooLarge(`At most ${MAX_QUERIED_USERS} users per query`);
    const local: [string, string[]][] = [];
    const remote = new Map<string, Record<string, string[]>>();
    const failures: JsonObject = {};
    for (const [user, devices] of entries) {
      const userId = parseUserId(user);
      if (!Array.isArray(devices) || !devices.every((d) => typeof d === 'string')) {
        throw HearthError.badJson(`device_keys.${user} must be a list of device IDs`);
      }
      const server = serverNameOf(userId);
      if (server === this.deps.serverName) local.push([userId, devices as string[]]);
      else if (this.deps.remoteKeys === undefined) failures[server] = { status: 503, message: 'Federation is not available' };
      else {
        const forServer = remote.get(server) ?? {};
        forServer[userId] = devices as string[];
        remote.set(server, forServer);
      }
    }
    // Other servers are waited for while the local keys are read.
    const asked = remote.size > 0 ? this.remoteQuery(remote, timeoutMs) : undefined;
    const deviceKeys: Record<string, Record<string, JsonObject>> = {};
    for (const [userId, devices] of local) {
      const rows = await selectKeysOfDevices(this.deps.db, userId, devices.length === 0 ? undefined : devices);
      const byDevice: Record<string, JsonObject> = {};
      for (const r of rows) {
        const unsigned = isJsonObject(r.keys['unsigned']) ? r.keys['unsigned'] : {};
        byDevice[r.deviceId] = {
          ...r.keys,
          unsigned: { ...unsigned, ...(r.displayName !== null ? { device_display_name: r.displayName } : {}) },
        };
      }
      deviceKeys[userId] = byDevice;
    }
    const crossSigning = this.deps.crossSigning
      ? await this.deps.crossSigning.keysForQuery(requester.userId, Object.keys(deviceKeys), deviceKeys)
      : { master_keys: {}, self_signing_keys: {}, user_signing_keys: {} };
    if (asked !== undefined) {
      const answer = await asked;
      Object.assign(deviceKeys, answer.device_keys);
      Object.assign(crossSigning.master_keys, answer.master_keys);
      Object.assign(crossSigning.self_signing_keys, answer.self_signing_keys);
      Object.assign(failures, answer.failures);
    }
    return { device_keys: deviceKeys, failures, ...crossSigning };
  }

  /** POST /keys/claim: one one-time key per device and algorithm, else the device's fallback key. */
  async claim(body: JsonObject, wait: RemoteWait = {}): Promise<JsonObject> {
    const timeoutMs = remoteTimeout(body, wait);
    const wanted = body['one_time_keys'];
    if (!isJsonObject(wanted)) throw HearthError.badJson("'one_time_keys' must be an object");
    const requests: { userId: string; deviceId: string; algorithm: string }[] = [];
    const remote = new Map<string, Record<string, Record<string, string>>>();
    let remoteDevices = 0;
    const failures: JsonObject = {};
    for (const [user, devices] of Object.entries(wanted)) {
      const userId = parseUserId(user);
      if (!isJsonObject(devices)) throw HearthError.badJson(`one_time_keys.${user} must be an object`);
      for (const [deviceId, algorithm] of Object.entries(devices)) {
        if (typeof algorithm !== 'string') throw HearthError.badJson(`one_time_keys.${user}.${deviceId} must be an algorithm name`);
        const server = serverNameOf(userId);
        if (server === this.deps.serverName) requests.push({ userId, deviceId, algorithm });
        else if (this.deps.remoteKeys === undefined) failures[server] = { status: 503, message: 'Federation is not available' };
        else {
          const forServer = remote.get(server) ?? {};
          (forServer[userId] ??= {})[deviceId] = algorithm;
          remote.set(server, forServer);
          remoteDevices++;
        }
      }
    }
    if (requests.length + remoteDevices > MAX_CLAIMED_DEVICES) throw HearthError.tooLarge(`At most ${MAX_CLAIMED_DEVICES} devices per claim`);
    const asked = remote.size > 0 ? this.deps.remoteKeys?.claim(remote, timeoutMs) : undefined;
    const oneTimeKeys: Record<string, JsonObject> = {};
    for (const { userId, deviceId, algorithm } of requests) {
      const key = await this.deps.db.transaction().execute(
        async (trx) => (await takeOneTimeKey(trx, userId, deviceId, algorithm)) ?? (await useFallbackKey(trx, userId, deviceId, algorithm)),
      );
      if (key === undefined) continue;
      this.counts.delete(countKey(userId, deviceId));
      const forUser = (oneTimeKeys[userId] ??= {});
      forUser[deviceId] = { [`${key.algorithm}:${key.keyId}`]: key.key };
    }
    if (asked !== undefined) {
      const answer = await asked;
      Object.assign(oneTimeKeys, answer.one_time_keys);
      Object.assign(failures, answer.failures);
    }
    return { one_time_keys: oneTimeKeys, failures };
  }

  /** For sync and /keys/upload: the device's one-time key counts and unused fallback key algorithms. */
  async keyCounts(userId: string, deviceId: string): Promise<KeyCounts> {
    const key = countKey(userId, deviceId);
    const cached = this.counts.get(key);
    if (cached !== undefined) return cached;
    const read = await selectKeyCounts(this.deps.db, userId, deviceId);
    const counts: KeyCounts = {
      oneTimeKeys: { [DEFAULT_COUNTED_ALGORITHM]: 0, ...read.oneTimeKeys },
      unusedFallbacks: read.unusedFallbacks,
    };
    if (this.counts.size >= COUNTS_KEPT) this.counts.delete(this.counts.keys().next().value as string);
    this.counts.set(key, counts);
    return counts;
  }

  /**
   * A device was created or renamed (every device of the user may have changed when `deviceId` is
   * not given): the users sharing a room with its owner hear of it.
   */
  async deviceListChanged(userId: string, deviceId?: string): Promise<void> {
    const change = await this.deps.db.transaction().execute((trx) => this.recordChange(trx, userId, deviceId === undefined ? undefined : [deviceId]));
    await this.announce(userId, change);
  }

  /** Devices were deleted: their keys go, and the change is announced. */
  async devicesDeleted(userId: string, deviceIds: readonly string[]): Promise<void> {
    const change = await this.deps.db.transaction().execute(async (trx) => {
      await deleteKeysOfDevices(trx, userId, deviceIds);
      return this.recordChange(trx, userId, deviceIds);
    });
    for (const d of deviceIds) this.counts.delete(countKey(userId, d));
    await this.announce(userId, change);
  }

  /** Another server's m.device_list_update of its user (undefined: unreadable): the copy, then the stream. */
  async remoteDeviceChanged(userId: string, change: DeviceChange | undefined): Promise<void> {
    await this.deps.remoteDeviceLists?.deviceChanged(userId, change);
    await this.remoteDeviceListChanged(userId);
  }

  /** Another server's m.signing_key_update of its user: the copy, then the stream. */
  async remoteSigningKeysChanged(userId: string, keys: SigningKeysChange): Promise<void> {
    await this.deps.remoteDeviceLists?.signingKeysChanged(userId, keys);
    await this.remoteDeviceListChanged(userId);
  }

  /**
   * Another server says its user's devices or cross-signing keys changed: the local users sharing a
   * room with them re-read that user's keys.
   */
  private async remoteDeviceListChanged(userId: string): Promise<void> {
    if (serverNameOf(parseUserId(userId)) === this.deps.serverName) return;
    const position = await this.deps.db.transaction().execute((trx) => insertDeviceListChange(trx, userId));
    await this.announce(userId, { position, destinations: [] });
  }

  /** Other servers' users' keys: from the kept copy where it is current, else asked of their servers. */
  private remoteQuery(remote: ReadonlyMap<string, Record<string, string[]>>, timeoutMs: number): ReturnType<RemoteKeys['query']> | undefined {
    const remoteKeys = this.deps.remoteKeys;
    if (remoteKeys === undefined) return undefined;
    const ask: RemoteKeys['query'] = (wanted, ms) => remoteKeys.query(wanted, ms);
    const answer = this.deps.remoteDeviceLists?.query(remote, timeoutMs, ask) ?? ask(remote, timeoutMs);
    // Awaited only after the local keys are read: a failure of the copy's reads must not count as unhandled meanwhile.
    answer.catch(() => undefined);
    return answer;
  }

  /** Records a change of these devices of a local user and queues the news for other servers. */
  private async recordChange(trx: Kysely<Schema>, userId: string, deviceIds: readonly string[] | undefined): Promise<RecordedChange> {
    const position = await insertDeviceListChange(trx, userId);
    const destinations = (await this.deps.outbound?.devicesChanged(trx, userId, deviceIds, position)) ?? [];
    return { position, destinations };
  }

  private async announce(userId: string, change: RecordedChange): Promise<void> {
    if (change.destinations.length > 0) this.deps.outbound?.send(change.destinations);
    const users = await this.deps.usersSharingRooms(userId);
    users.add(userId);
    this.deps.notifier.notify({ stream: 'device_lists', position: change.position, userIds: [...users] });
  }
}

/** Whether two JSON values are equal (their canonical forms are). */
export function sameJson(a: JsonValue, b: JsonValue): boolean {
  return canonicalJson(a, { strict: false }) === canonicalJson(b, { strict: false });
}

function countKey(userId: string, deviceId: string): string {
  return `${userId}\u0000${deviceId}`;
}

/**
 * The spec's DeviceKeys, as Synapse checks it: every field present (a missing one is
 * M_MISSING_PARAM) and of its type (else M_BAD_JSON), for the requester's own device.
 */
function checkDeviceKeys(keys: JsonValue, userId: string, deviceId: string): asserts keys is JsonObject {
  if (!isJsonObject(keys)) throw HearthError.badJson("'device_keys' must be an object");
  for (const field of ['user_id', 'device_id', 'algorithms', 'keys', 'signatures']) {
    if (keys[field] === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: device_keys.${field}`);
  }
  if (typeof keys['user_id'] !== 'string') throw HearthError.badJson('device_keys.user_id must be a string');
  if (typeof keys['device_id'] !== 'string') throw HearthError.badJson('device_keys.device_id must be a string');
  const algorithms = keys['algorithms'];
  if (!Array.isArray(algorithms) || !algorithms.every((a) => typeof a === 'string')) {
    throw HearthError.badJson('device_keys.algorithms must be a list of strings');
  }
  if (!isStringMap(keys['keys'])) throw HearthError.badJson('device_keys.keys must map key IDs to strings');
  if (!isSignatureMap(keys['signatures'])) throw HearthError.badJson('device_keys.signatures must map user IDs to key IDs to signatures');
  if (keys['user_id'] !== userId) throw HearthError.badJson('device_keys.user_id does not match the requester');
  if (keys['device_id'] !== deviceId) throw HearthError.badJson("device_keys.device_id does not match the requester's device");
}

/**
 * How long to wait for other servers: `timeout` (milliseconds) where the spec has it, in the body
 * (an integer), else as given outside it, else the default; never more than the cap.
 */
function remoteTimeout(body: JsonObject, wait: RemoteWait): number {
  const timeout = body['timeout'];
  if (timeout !== undefined && !Number.isSafeInteger(timeout)) throw HearthError.badJson("'timeout' must be an integer");
  const asked = typeof timeout === 'number' ? timeout : (wait.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS);
  return Math.min(Math.max(asked, 0), MAX_REMOTE_TIMEOUT_MS);
}

function isStringMap(v: JsonValue | undefined): boolean {
  return isJsonObject(v) && Object.values(v).every((s) => typeof s === 'string');
}

/** `{user ID: {key ID: signature}}`, every signature a string. */
export function isSignatureMap(v: JsonValue | undefined): boolean {
  return isJsonObject(v) && Object.values(v).every(isStringMap);
}

/**
 * `{"<algorithm>:<key id>": key}` as a list. A key is a string, or a signed key object with `key`
 * and `signatures` (and `fallback` for fallback keys), as Synapse checks them.
 */
function keyList(value: JsonValue | undefined, field: string): StoredKey[] {
  if (value === undefined || value === null) return [];
  if (!isJsonObject(value)) throw HearthError.badJson(`'${field}' must be an object`);
  const out: StoredKey[] = [];
  for (const [id, key] of Object.entries(value)) {
    const colon = id.indexOf(':');
    if (colon <= 0 || colon === id.length - 1 || id.indexOf(':', colon + 1) !== -1) {
      throw HearthError.badJson(`${field}: key ID ${id.slice(0, 100)} is not <algorithm>:<key id>`);
    }
    if (isJsonObject(key)) {
      if (typeof key['key'] !== 'string') throw HearthError.badJson(`${field}.${id}.key must be a string`);
      if (!isSignatureMap(key['signatures'])) throw HearthError.badJson(`${field}.${id}.signatures must map user IDs to key IDs to signatures`);
      if (key['fallback'] !== undefined && key['fallback'] !== null && typeof key['fallback'] !== 'boolean') {
        throw HearthError.badJson(`${field}.${id}.fallback must be a boolean`);
      }
    } else if (typeof key !== 'string') {
      throw HearthError.badJson(`${field}.${id} must be a string or an object`);
    }
    out.push({ algorithm: id.slice(0, colon), keyId: id.slice(colon + 1), key });
  }
  return out;
}
