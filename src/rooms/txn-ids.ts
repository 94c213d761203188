// Idempotent sends: a (room, sender, device, txnId) names at most one event. The room server is
// the only writer of events, so once it has read a device's transaction ids in a room it knows
// every later one itself: the first send of a device into a room reads the ids stored for it (up
// to a bound), and from then on a new txnId is answered from memory. The newest ids are kept with
// their events; older ones only as fingerprints (txn-filter.ts), so a new id still needs no lookup
// while an old one is looked up. Fingerprints are bounded in all: past the bound the least
// recently used devices are forgotten (and read again when they send). A device with more stored
// ids than the read bound, or alone holding more fingerprints than that bound, is looked up in the
// database per send.

import type { Kysely } from 'kysely';
import type { Schema } from '../storage/schema.js';
import type { HotRoomQueries } from '../storage/rooms/hot-queries.js';
import { TxnFilter } from './txn-filter.js';

export interface TxnIdLimits {
  /** Stored ids read for one device in one room; more means "look each one up". */
  readonly loadLimit: number;
  /** Devices-in-rooms remembered; the least recently used is forgotten (and read again if needed). */
  readonly maxDevices: number;
  /** Ids remembered with their events per device in a room; older ones are kept as fingerprints. */
  readonly maxIds: number;
  /** Fingerprints kept over all devices (4 bytes each, in tables at most three quarters full). */
  readonly maxFingerprints: number;
}

const DEFAULT_LIMITS: TxnIdLimits = { loadLimit: 20_000, maxDevices: 20_000, maxIds: 4000, maxFingerprints: 1_000_000 };

interface DeviceTxns {
  /** Whether `ids` and `dropped` account for every transaction id of this device in this room. */
  complete: boolean;
  readonly ids: Map<string, Promise<string>>;
  /** Ids dropped from `ids` to bound memory (their events are stored). */
  dropped?: TxnFilter;
}

export interface TxnKey {
  readonly roomNid: number;
  readonly sender: string;
  readonly deviceId: string;
}

export class TxnIds {
  private readonly devices = new Map<string, DeviceTxns>();
  private readonly loading = new Map<string, Promise<DeviceTxns>>();
  /** Fingerprints held by the devices remembered. */
  private fingerprints = 0;

  private readonly limits: TxnIdLimits;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly queries: HotRoomQueries,
    limits: Partial<TxnIdLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  private keyOf(k: TxnKey): string {
    return `${k.roomNid}\u0000${k.sender}\u0000${k.deviceId}`;
  }

  /**
   * The event sent earlier with this transaction id (perhaps still being written), if any. A
   * send must then `peek` again and `record` in one turn: other sends run during this await.
   */
  async find(k: TxnKey, txnId: string): Promise<Promise<string> | undefined> {
    const device = await this.device(k);
    const known = device.ids.get(txnId);
    if (known !== undefined) return known;
    if (device.complete && device.dropped?.mightHave(txnId) !== true) return undefined;
    const stored = await this.queries.eventIdByTxn(this.db, k.roomNid, k.sender, k.deviceId, txnId);
    return stored === undefined ? this.peek(k, txnId) : Promise.resolve(stored);
  }

  /** What memory knows of this transaction id, without waiting. */
  peek(k: TxnKey, txnId: string): Promise<string> | undefined {
    return this.devices.get(this.keyOf(k))?.ids.get(txnId);
  }

  /** Records a send (in the turn it starts). A failed send is forgotten, so that a retry sends again. */
  record(k: TxnKey, txnId: string, eventId: Promise<string>): void {
    const key = this.keyOf(k);
    let device = this.devices.get(key);
    if (device === undefined) {
      // Forgotten meanwhile: what memory holds from now on is not the whole story.
      device = { complete: false, ids: new Map() };
      this.devices.set(key, device);
    }
    device.ids.set(txnId, eventId);
    eventId.catch(() => {
      if (device.ids.get(txnId) === eventId) device.ids.delete(txnId);
    });
    if (device.ids.size > this.limits.maxIds) this.spill(key, device);
  }

  /** Keeps a device's newest half of ids in memory; the rest become fingerprints. */
  private spill(key: string, device: DeviceTxns): void {
    const drop = device.ids.size - Math.floor(this.limits.maxIds / 2);
    const filter = device.complete ? (device.dropped ??= new TxnFilter()) : undefined;
    const before = filter?.size ?? 0;
    let n = 0;
    for (const id of device.ids.keys()) {
      if (n++ >= drop) break;
      device.ids.delete(id);
      filter?.add(id);
    }
    if (filter === undefined) return;
    this.fingerprints += filter.size - before;
    this.bound(key, device);
  }

  /** Over the bound of fingerprints: forgets the least recently used devices, this one last. */
  private bound(key: string, device: DeviceTxns): void {
    if (device.dropped !== undefined && device.dropped.size > this.limits.maxFingerprints) {
      // Too many for memory alone: every id of it not in memory is looked up from now on.
      this.fingerprints -= device.dropped.size;
      device.complete = false;
      device.dropped = undefined;
    }
    for (const [k, d] of this.devices) {
      if (this.fingerprints <= this.limits.maxFingerprints) return;
      if (k !== key) this.forget(k, d);
    }
  }

  private forget(key: string, device: DeviceTxns): void {
    this.devices.delete(key);
    this.fingerprints -= device.dropped?.size ?? 0;
  }

  private async device(k: TxnKey): Promise<DeviceTxns> {
    const key = this.keyOf(k);
    const known = this.devices.get(key);
    if (known !== undefined) {
      // Most recently used last.
      this.devices.delete(key);
      this.devices.set(key, known);
      return known;
    }
    let pending = this.loading.get(key);
    if (pending === undefined) {
      pending = this.load(k).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    const loaded = await pending;
    // A send may have been recorded under an entry that was loaded meanwhile: keep that one.
    const current = this.devices.get(key);
    if (current !== undefined) return current;
    this.devices.set(key, loaded);
    this.fingerprints += loaded.dropped?.size ?? 0;
    if (this.devices.size > this.limits.maxDevices) {
      const [oldest, d] = this.devices.entries().next().value!;
      this.forget(oldest, d);
    }
    this.bound(key, loaded);
    return loaded;
  }

  private async load(k: TxnKey): Promise<DeviceTxns> {
    const rows = await this.db
      .selectFrom('events')
      .select(['event_nid', 'txn_id', 'event_id'])
      .where('room_nid', '=', k.roomNid)
      .where('sender', '=', k.sender)
      .where('txn_device_id', '=', k.deviceId)
      .limit(this.limits.loadLimit + 1)
      .execute();
    const device: DeviceTxns = { complete: rows.length <= this.limits.loadLimit, ids: new Map() };
    // The newest with their events; when these are all, the others as fingerprints (else they
    // are looked up anyway).
    rows.sort((a, b) => Number(b.event_nid) - Number(a.event_nid));
    const inMemory = Math.min(rows.length, Math.floor(this.limits.maxIds / 2));
    for (let i = inMemory - 1; i >= 0; i--) device.ids.set(rows[i]!.txn_id!, Promise.resolve(rows[i]!.event_id));
    if (device.complete && rows.length > inMemory) {
      device.dropped = new TxnFilter();
      for (let i = inMemory; i < rows.length; i++) device.dropped.add(rows[i]!.txn_id!);
    }
    return device;
  }
}
