// Loading what the history-visibility rules (rooms/visibility.ts) need for one user in one room:
// the room's history_visibility changes and the user's membership changes, with their positions.
// Sync uses this too, to filter timelines before a user's join.

import type { Kysely } from 'kysely';
import type { Schema } from '../../storage/schema.js';
import { stateEntryHistories } from '../../storage/sync/events.js';
import { positionOf, type StoredEvent } from '../stored-event.js';
import { canSeeEvent, stateChanges, type VisibilityHistory } from '../visibility.js';

/** As sync reads it: the entries' events and their current-state changes (a merge of forks changes them too). */
export async function loadVisibilityHistory(db: Kysely<Schema>, roomNid: number, userId: string): Promise<VisibilityHistory> {
  return (await loadVisibilityHistories(db, [roomNid], userId)).get(roomNid)!;
}

/** The same for several rooms in two statements (a search's results span rooms). */
export async function loadVisibilityHistories(db: Kysely<Schema>, roomNids: readonly number[], userId: string): Promise<Map<number, VisibilityHistory>> {
  const [vis, mem] = await Promise.all([
    stateEntryHistories(db, roomNids, 'm.room.history_visibility', ''),
    stateEntryHistories(db, roomNids, 'm.room.member', userId),
  ]);
  return new Map(
    roomNids.map((nid) => [
      nid,
      { visibility: stateChanges(vis.get(nid), 'history_visibility', ''), membership: stateChanges(mem.get(nid), 'membership', 'leave') },
    ]),
  );
}

/** The events `userId` may see, in their order. */
export function visibleEvents(history: VisibilityHistory, events: readonly StoredEvent[], userId: string): StoredEvent[] {
  return events.filter((e) =>
    canSeeEvent(history, { position: positionOf(e), type: e.type, ...(e.stateKey !== undefined ? { stateKey: e.stateKey } : {}) }, userId),
  );
}
