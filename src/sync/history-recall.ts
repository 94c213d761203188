// History visibility for sync timelines: what the rules (rooms/visibility.ts) need per room, read
// for many rooms at once and kept for the length of one sync.

import type { Kysely } from 'kysely';
import { isJsonObject } from '../protocol/json.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import { canSeeEvent, type StateChange, type VisibilityHistory } from '../rooms/visibility.js';
import type { Schema } from '../storage/schema.js';
import { stateEntryHistories, type StateEntryChange } from '../storage/sync/events.js';

function changes(rows: readonly StateEntryChange[] | undefined, field: string, fallback: string): StateChange[] {
  return (rows ?? []).map((r) => {
    const content = (JSON.parse(r.json) as { content?: unknown }).content;
    const v = isJsonObject(content) ? content[field] : undefined;
    return { position: r.position, value: typeof v === 'string' && v !== '' ? v : fallback };
  });
}

export class HistoryRecall {
  private readonly histories = new Map<number, VisibilityHistory>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly userId: string,
  ) {}

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
        visibility: changes(visibility.get(nid), 'history_visibility', ''),
        membership: changes(membership.get(nid), 'membership', 'leave'),
      });
    }
  }

  async canSee(roomNid: number, e: StoredEvent): Promise<boolean> {
    let history = this.histories.get(roomNid);
    if (history === undefined) {
      await this.prefetch([roomNid]);
      history = this.histories.get(roomNid)!;
    }
    return canSeeEvent(
      history,
      { position: e.streamOrdering, type: e.type, ...(e.stateKey !== undefined ? { stateKey: e.stateKey } : {}) },
      this.userId,
    );
  }
}
