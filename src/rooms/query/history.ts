// Loading what the history-visibility rules (rooms/visibility.ts) need for one user in one room:
// the room's history_visibility changes and the user's membership changes, with their positions.
// Sync uses this too, to filter timelines before a user's join.

import { stateEntryHistory } from '../../storage/rooms/events.js';
import type { Kysely } from 'kysely';
import type { Schema } from '../../storage/schema.js';
import { positionOf, type StoredEvent } from '../stored-event.js';
import { canSeeEvent, type VisibilityHistory } from '../visibility.js';

export async function loadVisibilityHistory(db: Kysely<Schema>, roomNid: number, userId: string): Promise<VisibilityHistory> {
  const [vis, mem] = await Promise.all([
    stateEntryHistory(db, roomNid, 'm.room.history_visibility', ''),
    stateEntryHistory(db, roomNid, 'm.room.member', userId),
  ]);
  const valueOf = (json: string, field: string): string => {
    const v = (JSON.parse(json) as { content?: Record<string, unknown> }).content?.[field];
    return typeof v === 'string' ? v : '';
  };
  return {
    visibility: vis.map((r) => ({ position: Number(r.stream_ordering), value: valueOf(r.json, 'history_visibility') })),
    membership: mem.map((r) => ({ position: Number(r.stream_ordering), value: valueOf(r.json, 'membership') || 'leave' })),
  };
}

/** The events `userId` may see, in their order. */
export function visibleEvents(history: VisibilityHistory, events: readonly StoredEvent[], userId: string): StoredEvent[] {
  return events.filter((e) =>
    canSeeEvent(history, { position: positionOf(e), type: e.type, ...(e.stateKey !== undefined ? { stateKey: e.stateKey } : {}) }, userId),
  );
}
