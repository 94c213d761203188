// Other servers' users' device lists, kept for the users sharing a room with one of ours, so that
// /keys/query about them is answered here. A list is fetched whole from the user's server
// (/user/devices, through the `source` port) and kept current by that server's
// m.device_list_update EDUs: an update applies when the copy holds every change the update
// follows (its `prev_id`, all at or before the copy's `stream_id`); otherwise a change was missed,
// and the copy is marked stale and fetched again in the background. A stale copy answers only
// when the user's server cannot. A user who no longer shares a room with ours is forgotten when
// next asked about; one who stopped sharing and shares again since the copy was fetched (their
// server sent nothing meanwhile) is fetched again.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import {
  advanceKeptDeviceList,
  deleteKeptDevice,
  deleteKeptDeviceList,
  markKeptDeviceListStale,
  replaceKeptDeviceList,
  selectKeptDeviceList,
  selectKeptDevices,
  updateKeptSigningKeys,
  upsertKeptDevice,
  type FetchedDeviceList,
  type KeptDeviceList,
} from '../storage/user-data/remote-device-lists.js';
import type { RemoteKeys } from './device-keys.js';

export type { FetchedDeviceList, KeptDevice } from '../storage/user-data/remote-device-lists.js';

/** Fetches running at once, for all users together; one per user at most. */
const PARALLEL_FETCHES = 4;
/** Users waiting for a fetch; beyond it a fetch is not queued (the next query or gap asks again). */
const MAX_WAITING = 1000;
const FETCH_TIMEOUT_MS = 30_000;
/** A longer list is not kept: its user's keys are asked of their server each time. */
const MAX_KEPT_DEVICES = 1000;

/** A user's whole device list, asked of their server; rejects when it cannot be had. */
export interface DeviceListSource {
  /** Devices are those whose keys name the user and the device (others are left out). */
  deviceList(userId: string, timeoutMs: number): Promise<FetchedDeviceList>;
}

/** One m.device_list_update, read and checked. */
export interface DeviceChange {
  readonly deviceId: string;
  readonly streamId: number;
  /** The changes this one follows (`prev_id`). */
  readonly prevIds: readonly number[];
  readonly deleted: boolean;
  /** The device's keys, naming the user and device; undefined when it has none. */
  readonly keys?: JsonObject | undefined;
  readonly displayName?: string | undefined;
}

/** The cross-signing keys an m.signing_key_update gave (each checked to be the user's, of its usage). */
export interface SigningKeysChange {
  readonly masterKey?: JsonObject | undefined;
  readonly selfSigningKey?: JsonObject | undefined;
}

export interface RemoteDeviceListsDeps {
  readonly db: Kysely<Schema>;
  readonly source: DeviceListSource;
  /**
   * Since when (events-stream position) the user has shared a room with a user of this server
   * without a break; undefined when they share none.
   */
  readonly sharingSince: (userId: string) => Promise<number | undefined>;
  readonly log?: { warn(message: string, details?: object): void };
  readonly now?: () => number;
}

type QueryAnswer = Awaited<ReturnType<RemoteKeys['query']>>;

/** A user's place in the fetch queue; `again`: a change came in while it ran, so it runs once more. */
interface Fetch {
  running: boolean;
  again: boolean;
}

export class RemoteDeviceLists {
  private readonly fetches = new Map<string, Fetch>();
  private readonly waiting: string[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private running = 0;
  private closed = false;

  constructor(private readonly deps: RemoteDeviceListsDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * An m.device_list_update from the user's server, about a user sharing a room with ours;
   * `change` undefined when it could not be read (then the copy no longer knows what changed).
   */
  async deviceChanged(userId: string, change: DeviceChange | undefined): Promise<void> {
    // A fetch under way may have read the list before this change.
    const fetch = this.fetches.get(userId);
    if (fetch?.running === true) fetch.again = true;
    const outcome = await this.deps.db.transaction().execute(async (trx) => {
      const now = this.now();
      if (change !== undefined) {
        const follows = change.prevIds.reduce<number | undefined>((max, p) => (max === undefined || p > max ? p : max), undefined);
        if (await advanceKeptDeviceList(trx, userId, change.streamId, follows, now)) {
          if (change.deleted) await deleteKeptDevice(trx, userId, change.deviceId);
          else await upsertKeptDevice(trx, userId, { deviceId: change.deviceId, keys: change.keys ?? null, displayName: change.displayName ?? null });
          return 'current';
        }
        const kept = await selectKeptDeviceList(trx, userId);
        if (kept === undefined) return 'not kept';
        // An older change, which the copy holds already.
        if (!kept.stale && change.streamId < kept.streamId) return 'current';
      }
      return (await markKeptDeviceListStale(trx, userId, now)) ? 'stale' : 'not kept';
    });
    if (outcome === 'stale') this.fetchLater(userId);
  }

  /** An m.signing_key_update from the user's server: the keys it gave replace the kept ones. */
  async signingKeysChanged(userId: string, keys: SigningKeysChange): Promise<void> {
    if (keys.masterKey === undefined && keys.selfSigningKey === undefined) return;
    await updateKeptSigningKeys(this.deps.db, userId, keys, this.now());
  }

  /**
   * /keys/query about other servers' users (server → user → device IDs, none: all): those with a
   * current copy are answered from it; the others are asked of their servers with `ask`, and
   * fetched in the background for next time. A server that fails is answered for from stale
   * copies, and left out of `failures` when every user asked of it had one.
   */
  async query(wanted: ReadonlyMap<string, Record<string, string[]>>, timeoutMs: number, ask: RemoteKeys['query']): Promise<QueryAnswer> {
    const out: QueryAnswer = { device_keys: {}, master_keys: {}, self_signing_keys: {}, failures: {} };
    const toAsk = new Map<string, Record<string, string[]>>();
    const stale = new Map<string, KeptDeviceList>();
    for (const [server, users] of wanted) {
      for (const [userId, deviceIds] of Object.entries(users)) {
        const kept = await this.usable(userId);
        if (kept !== undefined && !kept.stale) {
          await this.answer(out, userId, kept, deviceIds);
          continue;
        }
        if (kept !== undefined) stale.set(userId, kept);
        (toAsk.get(server) ?? toAsk.set(server, {}).get(server)!)[userId] = deviceIds;
      }
    }
    if (toAsk.size === 0) return out;
    const asked = await ask(toAsk, timeoutMs);
    Object.assign(out.device_keys, asked.device_keys);
    Object.assign(out.master_keys, asked.master_keys);
    Object.assign(out.self_signing_keys, asked.self_signing_keys);
    for (const [server, failure] of Object.entries(asked.failures)) {
      const users = Object.entries(toAsk.get(server) ?? {});
      let answered = 0;
      for (const [userId, deviceIds] of users) {
        const kept = stale.get(userId);
        if (kept === undefined) continue;
        await this.answer(out, userId, kept, deviceIds);
        answered++;
      }
      if (answered < users.length) out.failures[server] = failure;
    }
    return out;
  }

  /** Stops fetching; waits for the fetches under way (closing the federation client ends them). */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.length = 0;
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * The user's copy if the user shares a room with ours (else it is forgotten); a missing or stale
   * one is fetched in the background, and so is one made before a break in the sharing.
   */
  private async usable(userId: string): Promise<KeptDeviceList | undefined> {
    let kept = await selectKeptDeviceList(this.deps.db, userId);
    const since = await this.deps.sharingSince(userId);
    if (since === undefined) {
      if (kept !== undefined) await this.deps.db.transaction().execute((trx) => deleteKeptDeviceList(trx, userId));
      return undefined;
    }
    if (kept !== undefined && !kept.stale && since > kept.sharedSince) {
      await markKeptDeviceListStale(this.deps.db, userId, this.now());
      kept = { ...kept, stale: true };
    }
    if (kept === undefined || kept.stale) this.fetchLater(userId);
    return kept;
  }

  /** Adds the user's kept keys to `out`, as their server would answer /user/keys/query. */
  private async answer(out: QueryAnswer, userId: string, kept: KeptDeviceList, deviceIds: readonly string[]): Promise<void> {
    const devices = await selectKeptDevices(this.deps.db, userId, deviceIds.length === 0 ? undefined : deviceIds);
    const byDevice: Record<string, JsonObject> = {};
    for (const d of devices) {
      if (d.keys === null) continue;
      const { device_display_name: _, ...unsigned } = isJsonObject(d.keys['unsigned']) ? d.keys['unsigned'] : {};
      byDevice[d.deviceId] = { ...d.keys, unsigned: { ...unsigned, ...(d.displayName !== null ? { device_display_name: d.displayName } : {}) } };
    }
    out.device_keys[userId] = byDevice;
    if (kept.masterKey !== undefined) out.master_keys[userId] = kept.masterKey;
    if (kept.selfSigningKey !== undefined) out.self_signing_keys[userId] = kept.selfSigningKey;
  }

  /** Queues a fetch of the user's list, unless one is queued already (or a rerun once it ends). */
  private fetchLater(userId: string): void {
    if (this.closed) return;
    const fetch = this.fetches.get(userId);
    if (fetch !== undefined) {
      if (fetch.running) fetch.again = true;
      return;
    }
    if (this.waiting.length >= MAX_WAITING) return;
    this.fetches.set(userId, { running: false, again: false });
    this.waiting.push(userId);
    this.startFetches();
  }

  private startFetches(): void {
    while (!this.closed && this.running < PARALLEL_FETCHES && this.waiting.length > 0) {
      const userId = this.waiting.shift()!;
      const fetch = this.fetches.get(userId)!;
      fetch.running = true;
      this.running++;
      const done: Promise<void> = this.fetch(userId).finally(() => {
        this.running--;
        this.inFlight.delete(done);
        fetch.running = false;
        if (fetch.again && !this.closed) {
          fetch.again = false;
          this.waiting.push(userId);
        } else this.fetches.delete(userId);
        this.startFetches();
      });
      this.inFlight.add(done);
    }
  }

  /** Fetches the user's list and keeps it; a failure leaves the copy stale (or absent). */
  private async fetch(userId: string): Promise<void> {
    const forget = () => this.deps.db.transaction().execute((trx) => deleteKeptDeviceList(trx, userId));
    try {
      // Read before the list: a break in the sharing after it shows as a later position.
      const since = await this.deps.sharingSince(userId);
      if (since === undefined) return await forget();
      const list = await this.deps.source.deviceList(userId, FETCH_TIMEOUT_MS);
      if (list.devices.length > MAX_KEPT_DEVICES) throw new HearthError(502, 'M_UNKNOWN', `${list.devices.length} devices are more than are kept`);
      if (this.closed) return;
      // The user may have left meanwhile.
      if ((await this.deps.sharingSince(userId)) === undefined) return await forget();
      await this.deps.db.transaction().execute((trx) => replaceKeptDeviceList(trx, userId, list, since, this.now()));
    } catch (err) {
      if (!this.closed) this.deps.log?.warn('fetching a device list failed; it is asked for again when needed', { userId, err: err instanceof HearthError ? err.message : String(err) });
    }
  }
}
