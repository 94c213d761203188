// The latest stretch of the events stream, as this process's writer committed it. Every event
// with a position in (coveredAfter, last] is here, in order, so a range inside that stretch is
// answered without a read: the range a sync wakes for is, almost always, the send that woke it.
//
// Only this process writes the events stream (one writer; positions come from a counter updated
// in its transactions, so a rolled-back batch gives its positions back), so positions arrive one
// after another. A position that skips ahead means something else wrote the stream (another process
// on the same database): the log then starts over after the gap, and earlier ranges are read.

import type { StreamEvent } from '../storage/sync/events.js';

/** Entries kept; the oldest half is dropped past this. */
const KEPT = 4096;

export class RecentEvents {
  private entries: StreamEvent[] = [];
  private last: number;

  /** `coveredAfter`: the events stream's committed position when the log starts. */
  constructor(
    private coveredAfter: number,
    private readonly kept = KEPT,
  ) {
    this.last = coveredAfter;
  }

  /** Events just committed, in stream order, all past the last one added. */
  add(events: readonly StreamEvent[]): void {
    for (const e of events) {
      if (e.position <= this.last) throw new Error(`events stream out of order: ${e.position} after ${this.last}`);
      if (e.position !== this.last + 1) {
        this.entries = [];
        this.coveredAfter = e.position - 1;
      }
      this.entries.push(e);
      this.last = e.position;
    }
    if (this.entries.length > this.kept) {
      const drop = this.entries.length - Math.floor(this.kept / 2);
      this.coveredAfter = this.entries[drop - 1]!.position;
      this.entries = this.entries.slice(drop);
    }
  }

  /** Drops a purged room's events: the stretch then holds what the database does. */
  dropRoom(roomNid: number): void {
    this.entries = this.entries.filter((e) => e.roomNid !== roomNid);
  }

  /**
   * The events in (after, upTo], oldest first, at most `limit`; undefined when the range reaches
   * before the stretch held (or past what was committed).
   */
  range(after: number, upTo: number, limit: number): StreamEvent[] | undefined {
    if (after < this.coveredAfter || upTo > this.last) return undefined;
    // The first entry past `after` (binary search).
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.position <= after) lo = mid + 1;
      else hi = mid;
    }
    const out: StreamEvent[] = [];
    for (let i = lo; i < this.entries.length && out.length < limit; i++) {
      const e = this.entries[i]!;
      if (e.position > upTo) break;
      out.push(e);
    }
    return out;
  }
}
