// What the history-visibility rules read of the state before each event: the room's
// history_visibility and one user's membership, read from the events' own state snapshots (a room
// whose history forked has events whose state is not the stream's at their position), several
// snapshots in three statements, and kept per snapshot for the life of one read.

import type { Kysely } from 'kysely';
import { isJsonObject } from '../protocol/json.js';
import { stateKey } from '../protocol/events.js';
import { readSnapshotsSubset } from '../storage/rooms/state-snapshots.js';
import type { Schema } from '../storage/schema.js';
import type { StoredEvent } from './stored-event.js';
import type { VisibilityEvent } from './visibility.js';

type Before = NonNullable<VisibilityEvent['before']>;

export class StatesBefore {
  private readonly bySnapshot = new Map<number, Before>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly userId: string,
  ) {}

  /** Reads what these events' snapshots hold that is not read yet. */
  async load(events: readonly StoredEvent[]): Promise<void> {
    const wanted = [...new Set(events.flatMap((e) => (e.stateBeforeNid === undefined || this.bySnapshot.has(e.stateBeforeNid) ? [] : [e.stateBeforeNid])))];
    if (wanted.length === 0) return;
    const visKey = stateKey('m.room.history_visibility', '');
    const memberKey = stateKey('m.room.member', this.userId);
    const states = await readSnapshotsSubset(this.db, wanted, [
      { type: 'm.room.history_visibility', stateKey: '' },
      { type: 'm.room.member', stateKey: this.userId },
    ]);
    const nids = [...new Set([...states.values()].flatMap((m) => [...m.values()]))];
    const contents = new Map<number, unknown>();
    for (let i = 0; i < nids.length; i += 500) {
      const rows = await this.db.selectFrom('events').select(['event_nid', 'json']).where('event_nid', 'in', nids.slice(i, i + 500)).execute();
      for (const r of rows) contents.set(Number(r.event_nid), (JSON.parse(r.json) as { content?: unknown }).content);
    }
    const field = (nid: number | undefined, name: string): string | undefined => {
      const content = nid === undefined ? undefined : contents.get(nid);
      const v = isJsonObject(content) ? content[name] : undefined;
      return typeof v === 'string' && v !== '' ? v : undefined;
    };
    for (const [snapshot, state] of states) {
      this.bySnapshot.set(snapshot, { visibility: field(state.get(visKey), 'history_visibility'), membership: field(state.get(memberKey), 'membership') });
    }
  }

  /** The event as the rules read it: with the values before it when its snapshot was loaded. */
  visibilityEvent(e: StoredEvent, position: number): VisibilityEvent {
    const before = e.stateBeforeNid === undefined ? undefined : this.bySnapshot.get(e.stateBeforeNid);
    return { position, type: e.type, ...(e.stateKey !== undefined ? { stateKey: e.stateKey } : {}), ...(before !== undefined ? { before } : {}) };
  }
}
