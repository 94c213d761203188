// Reads that many syncs share. One send wakes every sync waiting on its room, and they all ask
// the same questions about the same range of the streams: what happened on the events stream
// between two positions, and the member counts of the room. Each is answered once (concurrent
// askers share the one read in flight) and kept for a while.
//
// What a range (after, upTo] of the events stream holds never changes once upTo is committed;
// the latest stretch of it is in memory (RoomReader.recentStream), so the range of a send's wake-up
// needs no read at all. Room facts are kept with the events position they were read at, and hold
// at a later position when the room's current state did not change (nor a redaction come) in between.

import type { Kysely } from 'kysely';
import type { RoomReader } from '../rooms/reader.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import { eventsInStreamRange, type StreamEvent } from '../storage/sync/events.js';
import { roomFacts, type RoomFacts } from './summary.js';

/** A bounded map of promises: concurrent askers of one key share its read; failures are not kept. */
export class SharedMemo<V> {
  private readonly entries = new Map<string, Promise<V>>();

  constructor(private readonly max: number) {}

  get(key: string, load: () => Promise<V>): Promise<V> {
    const known = this.entries.get(key);
    if (known !== undefined) return known;
    const promise = load();
    this.entries.set(key, promise);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    promise.catch(() => {
      if (this.entries.get(key) === promise) this.entries.delete(key);
    });
    return promise;
  }
}

/** Ranges longer than this are not read whole; syncs fall back to reads of their own. */
export const WINDOW_MAX_EVENTS = 1000;
const WINDOWS_KEPT = 64;
const FACTS_KEPT = 20_000;

export class SharedReads {
  private readonly windows = new SharedMemo<StreamEvent[] | undefined>(WINDOWS_KEPT);
  private readonly facts = new Map<string, { at: number; readonly facts: Promise<RoomFacts | undefined> }>();
  /** Events being read right now (the reader keeps them once read). */
  private readonly loading = new Map<number, Promise<StoredEvent | undefined>>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly reader: RoomReader,
    private readonly windowMax = WINDOW_MAX_EVENTS,
  ) {}

  /**
   * Events by nid through the room reader's cache; an event another sync is reading right now
   * (the one just sent, wanted by every sync it woke) is awaited rather than read again.
   */
  async events(nids: readonly number[]): Promise<Map<number, StoredEvent>> {
    const out = new Map<number, StoredEvent>();
    const pending: [number, Promise<StoredEvent | undefined>][] = [];
    const fresh: number[] = [];
    for (const nid of nids) {
      const p = this.loading.get(nid);
      if (p !== undefined) pending.push([nid, p]);
      else fresh.push(nid);
    }
    if (fresh.length > 0) {
      const read = this.reader.eventsByNids(fresh);
      for (const nid of fresh) {
        const p = read.then((m) => m.get(nid));
        this.loading.set(nid, p);
        const done = () => {
          if (this.loading.get(nid) === p) this.loading.delete(nid);
        };
        p.then(done, done);
      }
      for (const [nid, e] of await read) out.set(nid, e);
    }
    for (const [nid, p] of pending) {
      const e = await p;
      if (e !== undefined) out.set(nid, e);
    }
    return out;
  }

  /** Every event in (after, upTo], oldest first; undefined when there are too many to hold. */
  window(after: number, upTo: number): Promise<StreamEvent[] | undefined> {
    if (upTo <= after) return Promise.resolve([]);
    const recent = this.reader.recentStream(after, upTo, this.windowMax + 1);
    if (recent !== undefined) return Promise.resolve(recent.length > this.windowMax ? undefined : recent);
    return this.windows.get(`${after}:${upTo}`, async () => {
      const rows = await eventsInStreamRange(this.db, after, upTo, this.windowMax + 1);
      return rows.length > this.windowMax ? undefined : rows;
    });
  }

  /** Member counts and current snapshot of rooms, as of the events position `at`. */
  async roomFacts(rooms: readonly { roomId: string; roomNid: number }[], at: number): Promise<Map<string, RoomFacts>> {
    const missing: string[] = [];
    // Per position facts were kept at: the rooms whose state may have changed since (undefined: unknown).
    const changedSince = new Map<number, Set<number> | undefined>();
    for (const { roomId, roomNid } of rooms) {
      const kept = this.facts.get(roomId);
      if (kept?.at === at) continue;
      if (kept !== undefined && kept.at < at) {
        if (!changedSince.has(kept.at)) {
          changedSince.set(kept.at, this.reader.recentRooms(kept.at, at, this.windowMax, changesState));
        }
        const changed = changedSince.get(kept.at);
        if (changed !== undefined && !changed.has(roomNid)) {
          kept.at = at;
          continue;
        }
      }
      missing.push(roomId);
    }
    if (missing.length > 0) {
      const read = roomFacts(this.db, missing);
      for (const id of missing) {
        const entry = { at, facts: read.then((m) => m.get(id)) };
        this.facts.delete(id);
        this.facts.set(id, entry);
        entry.facts.catch(() => {
          if (this.facts.get(id) === entry) this.facts.delete(id);
        });
      }
      while (this.facts.size > FACTS_KEPT) this.facts.delete(this.facts.keys().next().value as string);
    }
    const out = new Map<string, RoomFacts>();
    for (const { roomId } of rooms) {
      const f = await this.facts.get(roomId)?.facts;
      if (f !== undefined) out.set(roomId, f);
    }
    return out;
  }
}

/** Whether an event may have changed a room's facts: its current state changed there, or a redaction (of a state event). */
function changesState(e: StreamEvent): boolean {
  return (e.changes !== undefined && e.changes.length > 0) || e.type === 'm.room.redaction';
}
