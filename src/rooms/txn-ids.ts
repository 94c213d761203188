// Idempotent sends: a (room, sender, device, txnId) names at most one event. The room server is
// the only writer of events, so once it has read a device's transaction ids in a room it knows
// every later one itself: the first send of a device into a room reads the ids stored for it (up
// to a bound), and from then on a new txnId is answered from memory. Ids that no longer fit in
// memory go into a Bloom filter, so a new id still needs no lookup while an old one is looked up.
// A device with more stored ids than the bound is looked up in the database per send, as is one
// whose filter filled up.

import type { Kysely } from 'kysely';
import type { Schema } from '../storage/schema.js';
import type { HotRoomQueries } from '../storage/rooms/hot-queries.js';
import { TxnFilter } from './txn-filter.js';

export interface TxnIdLimits {
  /** Stored ids read for one device in one room; more means "look each one up". */
  readonly loadLimit: number;
  /** Devices-in-rooms remembered; the least recently used is forgotten (and read again if needed). */
  readonly maxDevices: number;
  /** Ids remembered per device in a room before it falls back to lookups. */
  readonly maxIds: number;
}

const DEFAULT_LIMITS: TxnIdLimits = { loadLimit: 1000, maxDevices: 20_000, maxIds: 4000 };

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
    if (device.ids.size > this.limits.maxIds) {
      // Keep the newest half; the rest go into the filter, and are looked up when asked for.
      const drop = device.ids.size - Math.floor(this.limits.maxIds / 2);
      const filter = device.complete ? (device.dropped ??= new TxnFilter()) : undefined;
      let n = 0;
      for (const id of device.ids.keys()) {
        if (n++ >= drop) break;
        device.ids.delete(id);
        filter?.add(id);
      }
      if (filter?.full === true) {
        // Too many to tell apart: every id not in memory is looked up from now on.
        device.complete = false;
        device.dropped = undefined;
      }
    }
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
    if (this.devices.size > this.limits.maxDevices) this.devices.delete(this.devices.keys().next().value as string);
    return loaded;
  }

  private async load(k: TxnKey): Promise<DeviceTxns> {
    const rows = await this.db
      .selectFrom('events')
      .select(['txn_id', 'event_id'])
      .where('room_nid', '=', k.roomNid)
      .where('sender', '=', k.sender)
      .where('txn_device_id', '=', k.deviceId)
      .limit(this.limits.loadLimit + 1)
      .execute();
    const ids = new Map<string, Promise<string>>();
    for (const r of rows.slice(0, this.limits.loadLimit)) if (r.txn_id !== null) ids.set(r.txn_id, Promise.resolve(r.event_id));
    return { complete: rows.length <= this.limits.loadLimit, ids };
  }
}
