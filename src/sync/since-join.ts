// Which events after a user's join are shown to them without a history-visibility check: those
// decided against the room's current state of their time, in which the user was joined (their
// membership in the current state has been join since the position their join took). An event
// from another server's fork may have a state before without the user: it is checked as any
// other. Whether an event was decided on the current state is known for events this process
// wrote (StoredEvent.onCurrentState); for others, its state before is compared with the current
// state just before its position (one index entry each).

import type { Kysely } from 'kysely';
import { positionOf, type StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import { currentSnapshotsBefore } from '../storage/sync/state-deltas.js';

export class SinceJoin {
  private readonly confirmed = new Set<number>();

  constructor(private readonly db: Kysely<Schema>) {}

  /** Whether `e` is shown without a check, the user joined since `visibleFrom` (once `confirm` saw it). */
  sure(visibleFrom: number | undefined, e: StoredEvent): boolean {
    return visibleFrom !== undefined && positionOf(e) >= visibleFrom && (e.onCurrentState === true || this.confirmed.has(e.nid));
  }

  /** Looks up the events after the join whose decision this process does not know. */
  async confirm(items: readonly { readonly visibleFrom: number | undefined; readonly e: StoredEvent }[]): Promise<void> {
    const asks = items.filter(
      ({ visibleFrom, e }) =>
        visibleFrom !== undefined && positionOf(e) >= visibleFrom && e.onCurrentState !== true && e.stateBeforeNid !== undefined && !this.confirmed.has(e.nid),
    );
    if (asks.length === 0) return;
    const current = await currentSnapshotsBefore(this.db, asks.map(({ e }) => ({ roomNid: e.roomNid, position: positionOf(e) })));
    asks.forEach(({ e }, i) => {
      if (current.get(i) === e.stateBeforeNid) this.confirmed.add(e.nid);
    });
  }
}
