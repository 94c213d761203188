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
import { canSeeEvent, type VisibilityEvent, type VisibilityHistory } from './visibility.js';

type Before = NonNullable<VisibilityEvent['before']>;

export class StatesBefore {
  private readonly bySnapshot = new Map<number, Before>();
  /** canSee's answers per history and snapshot, where the event's position cannot change them. */
  private readonly answers = new WeakMap<VisibilityHistory, Map<number, boolean>>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly userId: string,
  ) {}

  /** Reads what these events' snapshots hold that is not read yet. */
  async load(events: readonly StoredEvent[]): Promise<void> {
    const missing = new Set<number>();
    for (const e of events) if (e.stateBeforeNid !== undefined && !this.bySnapshot.has(e.stateBeforeNid)) missing.add(e.stateBeforeNid);
    if (missing.size === 0) return;
    const wanted = [...missing];
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

  /**
   * Whether the user may see `e`, a timeline event (canSeeEvent at its position). Once the user is
   * joined now, an event other than a history_visibility change or the user's own member event is
   * seen or not by its snapshot's values alone (rules 1–4 no longer read the position), so the
   * answer is kept per snapshot: a page of 10,000 reactions is checked a few times, not 10,000.
   */
  canSee(history: VisibilityHistory, e: StoredEvent, position: number): boolean {
    const snapshot = e.stateBeforeNid;
    const plain = e.stateKey === undefined || (e.type !== 'm.room.history_visibility' && !(e.type === 'm.room.member' && e.stateKey === this.userId));
    if (snapshot === undefined || !plain || !this.bySnapshot.has(snapshot) || history.membership.at(-1)?.value !== 'join') {
      return canSeeEvent(history, this.visibilityEvent(e, position), this.userId);
    }
    let known = this.answers.get(history);
    if (known === undefined) this.answers.set(history, (known = new Map()));
    let answer = known.get(snapshot);
    if (answer === undefined) known.set(snapshot, (answer = canSeeEvent(history, this.visibilityEvent(e, position), this.userId)));
    return answer;
  }

  /** The event as the rules read it: with the values before it when its snapshot was loaded. */
  visibilityEvent(e: StoredEvent, position: number): VisibilityEvent {
    const before = e.stateBeforeNid === undefined ? undefined : this.bySnapshot.get(e.stateBeforeNid);
    return { position, type: e.type, ...(e.stateKey !== undefined ? { stateKey: e.stateKey } : {}), ...(before !== undefined ? { before } : {}) };
  }
}
