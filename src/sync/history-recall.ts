// History visibility for sync timelines: what the rules (rooms/visibility.ts) need per room, read
// for many rooms at once and kept for the length of one sync.
//
// Sync timelines show besides what the rules allow the state events that are still the room's
// current state, as the reference server does (it passes the current state to its visibility
// filter as events always to include): a member back in a "joined" room sees who joined while
// they were away, and the name or topic set meanwhile, where they happened. /messages does not.

import type { Kysely } from 'kysely';
import { stateKey } from '../protocol/events.js';
import { positionOf, type StoredEvent } from '../rooms/stored-event.js';
import { stateChanges, type VisibilityHistory } from '../rooms/visibility.js';
import { StatesBefore } from '../rooms/visibility-at.js';
import { readSnapshotSubset } from '../storage/rooms/state-snapshots.js';
import type { Schema } from '../storage/schema.js';
import { stateEntryHistories } from '../storage/sync/events.js';

export class HistoryRecall {
  private readonly histories = new Map<number, VisibilityHistory>();
  private readonly before: StatesBefore;

  /** `currentSnapshot` gives a room's current state snapshot (the sync's room facts). */
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly userId: string,
    private readonly currentSnapshot: (roomNid: number) => Promise<number | undefined> = () => Promise.resolve(undefined),
  ) {
    this.before = new StatesBefore(db, userId);
  }

  /** Reads the state before each of these events (their snapshots not read yet), for many at once. */
  prefetchStatesBefore(events: readonly StoredEvent[]): Promise<void> {
    return this.before.load(events);
  }

  /** Reads the histories of these rooms (those not read yet) in two statements. */
  async prefetch(roomNids: readonly number[]): Promise<void> {
    const missing = [...new Set(roomNids)].filter((nid) => !this.histories.has(nid));
    if (missing.length === 0) return;
    const [visibility, membership] = await Promise.all([
      stateEntryHistories(this.db, missing, 'm.room.history_visibility', ''),
      stateEntryHistories(this.db, missing, 'm.room.member', this.userId),
    ]);
    for (const nid of missing) {
      this.histories.set(nid, {
        visibility: stateChanges(visibility.get(nid), 'history_visibility', ''),
        membership: stateChanges(membership.get(nid), 'membership', 'leave'),
      });
    }
  }

  async canSee(roomNid: number, e: StoredEvent): Promise<boolean> {
    let history = this.histories.get(roomNid);
    if (history === undefined) {
      await this.prefetch([roomNid]);
      history = this.histories.get(roomNid)!;
    }
    await this.before.load([e]);
    return this.before.canSee(history, e, positionOf(e));
  }

  /** Of these state events of one room, the nids of those that are its current state (one read per event type). */
  async stillCurrent(roomNid: number, events: readonly StoredEvent[]): Promise<Set<number>> {
    const out = new Set<number>();
    const byType = new Map<string, StoredEvent[]>();
    for (const e of events) {
      if (e.stateKey === undefined) continue;
      let list = byType.get(e.type);
      if (!list) byType.set(e.type, (list = []));
      list.push(e);
    }
    if (byType.size === 0) return out;
    const snapshot = await this.currentSnapshot(roomNid);
    if (snapshot === undefined) return out;
    for (const [type, list] of byType) {
      const current = await readSnapshotSubset(this.db, snapshot, type, [...new Set(list.map((e) => e.stateKey!))]);
      for (const e of list) if (current.get(stateKey(type, e.stateKey!)) === e.nid) out.add(e.nid);
    }
    return out;
  }
}
