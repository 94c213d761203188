// Parsed events kept in memory, least recently used first out (among the older half; see get),
// within three bounds: a number of events, an estimate of the memory they hold
// (global.cache.max_size_estimated; events run from a few hundred bytes to 64 KB, so a count alone
// bounds nothing) and an age (global.cache.max_age), past which an event is read again.

import type { StoredEvent } from './stored-event.js';

export interface EventCacheLimits {
  readonly maxEvents: number;
  /** Estimated bytes (see StoredEvent.size). */
  readonly maxBytes: number;
  readonly maxAgeMs: number;
  readonly now?: () => number;
}

interface Entry {
  readonly event: StoredEvent;
  readonly at: number;
  /** When it was last put at the end of the eviction order (EventCache.moves). */
  moved: number;
}

export class EventCache {
  private readonly byNid = new Map<number, Entry>();
  private readonly nidById = new Map<string, number>();
  private bytes = 0;
  /** Entries put at the end of the eviction order so far, added or moved. */
  private moves = 0;
  private readonly now: () => number;
  /** Lookups by get that found a live event, and that did not (for metrics). */
  hits = 0;
  misses = 0;

  constructor(private readonly limits: EventCacheLimits) {
    this.now = limits.now ?? Date.now;
  }

  /** The event, made the most recently used; undefined when absent or too old. */
  get(nid: number): StoredEvent | undefined {
    const entry = this.byNid.get(nid);
    if (entry === undefined) {
      this.misses++;
      return undefined;
    }
    if (this.now() - entry.at > this.limits.maxAgeMs) {
      this.byNid.delete(nid);
      this.forget(entry.event);
      this.misses++;
      return undefined;
    }
    // Fewer moves since its own than half the entries the cache holds when full: it is among the
    // newer half, which no eviction reaches before the older half has gone, so it stays where it
    // is. A page of 10,000 events read again then writes nothing to the map.
    if (this.moves - entry.moved > this.capacity() / 2) {
      this.byNid.delete(nid);
      this.byNid.set(nid, entry);
      entry.moved = ++this.moves;
    }
    this.hits++;
    return entry.event;
  }

  /** The event as get gives it, but left where it stands in the eviction order. */
  peek(nid: number): StoredEvent | undefined {
    const entry = this.byNid.get(nid);
    return entry === undefined || this.now() - entry.at > this.limits.maxAgeMs ? undefined : entry.event;
  }

  nidOf(eventId: string): number | undefined {
    return this.nidById.get(eventId);
  }

  add(event: StoredEvent): void {
    const known = this.byNid.get(event.nid);
    if (known !== undefined) {
      this.byNid.delete(event.nid);
      this.forget(known.event);
    }
    // An event larger than the whole budget is not kept at all.
    if (event.size > this.limits.maxBytes) return;
    this.byNid.set(event.nid, { event, at: this.now(), moved: ++this.moves });
    this.nidById.set(event.eventId, event.nid);
    this.bytes += event.size;
    while (this.byNid.size > this.limits.maxEvents || this.bytes > this.limits.maxBytes) {
      const oldest = this.byNid.values().next().value as Entry;
      this.byNid.delete(oldest.event.nid);
      this.forget(oldest.event);
    }
  }

  delete(eventId: string): void {
    const nid = this.nidById.get(eventId);
    if (nid === undefined) return;
    const entry = this.byNid.get(nid);
    this.byNid.delete(nid);
    if (entry !== undefined) this.forget(entry.event);
    else this.nidById.delete(eventId);
  }

  /** Drops every event of a room (purged). */
  deleteRoom(roomNid: number): void {
    for (const [nid, entry] of this.byNid) {
      if (entry.event.roomNid !== roomNid) continue;
      this.byNid.delete(nid);
      this.forget(entry.event);
    }
  }

  /** How many events, and their estimated bytes. */
  get usage(): { events: number; bytes: number } {
    return { events: this.byNid.size, bytes: this.bytes };
  }

  /** About how many events the cache holds when full: the count bound, or the byte bound at their mean size. */
  private capacity(): number {
    const { maxEvents, maxBytes } = this.limits;
    return this.bytes <= 0 ? maxEvents : Math.min(maxEvents, (this.byNid.size * maxBytes) / this.bytes);
  }

  /** Bookkeeping of an entry already taken out of byNid. */
  private forget(event: StoredEvent): void {
    this.bytes -= event.size;
    if (this.nidById.get(event.eventId) === event.nid) this.nidById.delete(event.eventId);
  }
}
