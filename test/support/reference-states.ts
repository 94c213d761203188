// An independent computation of a room's states, for comparing a server's results with: every
// event in prev_events order, its state before resolved from its prev events' states (v1 or v2
// resolution by room version), then the spec's checks 5–6 of "Checks performed on receipt of a
// PDU" (authorized by its auth events, and by the state before it); a rejected event leaves the
// state unchanged. Soft failure depends on arrival order and is left out.

import { authStateFromEvents, checkAuthEventsList } from '../../src/protocol/auth-events.js';
import { checkEventAuth } from '../../src/protocol/event-auth.js';
import { stateKey, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import type { RoomVersion } from '../../src/protocol/room-versions.js';
import { resolveState, type StateResEventSource } from '../../src/protocol/state-res/index.js';

export class ReferenceStates {
  private readonly before = new Map<string, Map<StateKey, string>>();
  private readonly after = new Map<string, Map<StateKey, string>>();
  /** Rejected events and why. */
  readonly rejected = new Map<string, string>();
  /** The events in the order they were computed (every event after its prev events). */
  readonly order: string[] = [];
  private readonly source: StateResEventSource;

  private constructor(
    readonly roomId: string,
    readonly version: RoomVersion,
    readonly events: ReadonlyMap<string, RoomEvent>,
  ) {
    this.source = {
      getEvents: (ids) => {
        const out = new Map<string, RoomEvent>();
        for (const id of ids) {
          const e = this.events.get(id);
          if (e !== undefined) out.set(id, e);
        }
        return out;
      },
      rejectedAmong: (ids) => new Set(ids.filter((id) => this.rejected.has(id))),
    };
  }

  /** Computes the states of `events` (one room; every prev event among them). */
  static async compute(version: RoomVersion, events: Iterable<RoomEvent>): Promise<ReferenceStates> {
    const byId = new Map<string, RoomEvent>();
    for (const e of events) byId.set(e.event_id, e);
    const first = byId.values().next().value;
    if (first === undefined) throw new Error('no events');
    const states = new ReferenceStates(first.room_id, version, byId);
    for (const id of topologicalOrder(byId)) await states.add(byId.get(id)!);
    return states;
  }

  private async add(event: RoomEvent): Promise<void> {
    const before = await this.resolve(event.prev_events);
    this.before.set(event.event_id, before);
    this.order.push(event.event_id);
    const reason = this.rejection(event, before);
    const after = new Map(before);
    if (reason !== undefined) this.rejected.set(event.event_id, reason);
    else if (event.state_key !== undefined) after.set(stateKey(event.type, event.state_key), event.event_id);
    this.after.set(event.event_id, after);
  }

  private rejection(event: RoomEvent, before: ReadonlyMap<StateKey, string>): string | undefined {
    if (event.room_id !== this.roomId) return 'another room';
    // 5. Authorized by its auth events (rule 2 judges the list itself).
    const authEvents: RoomEvent[] = [];
    for (const id of event.auth_events) {
      const e = this.events.get(id);
      if (e !== undefined) authEvents.push(e);
    }
    const list = checkAuthEventsList(event, authEvents, this.version, { isRejected: (id) => this.rejected.has(id) });
    if (!list.allowed) return list.reason;
    // v12: no event cites the create event; the room id names it (accepted, not rejected).
    const createId = this.version.createEventRoomId ? '$' + this.roomId.slice(1) : undefined;
    const create = createId !== undefined && !this.rejected.has(createId) ? this.events.get(createId) : undefined;
    const byAuth = checkEventAuth(event, authStateFromEvents(authEvents, create), this.version);
    if (!byAuth.allowed) return byAuth.reason;
    // 6. Authorized by the state before it.
    const state = new Map<StateKey, RoomEvent>();
    for (const [key, id] of before) state.set(key, this.events.get(id)!);
    const byState = checkEventAuth(event, state, this.version);
    return byState.allowed ? undefined : byState.reason;
  }

  /** The state after `ids` (the state before an event with these prev events). */
  async resolve(ids: readonly string[]): Promise<Map<StateKey, string>> {
    if (ids.length === 0) return new Map();
    if (ids.length === 1) return this.stateAfter(ids[0]!);
    return resolveState(this.roomId, this.version, ids.map((id) => this.stateAfter(id)), this.source);
  }

  stateAfter(id: string): Map<StateKey, string> {
    const state = this.after.get(id);
    if (state === undefined) throw new Error(`no state after ${id}`);
    return new Map(state);
  }

  stateBefore(id: string): Map<StateKey, string> {
    const state = this.before.get(id);
    if (state === undefined) throw new Error(`no state before ${id}`);
    return new Map(state);
  }

  /** The forward extremities among accepted events: none of them cited by another as a prev. */
  extremities(): string[] {
    const cited = new Set<string>();
    for (const id of this.order) for (const p of this.events.get(id)!.prev_events) cited.add(p);
    return this.order.filter((id) => !cited.has(id) && !this.rejected.has(id));
  }

  /** The state after the accepted forward extremities: the room's current state. */
  currentState(): Promise<Map<StateKey, string>> {
    return this.resolve(this.extremities());
  }
}

/** Event ids, each after its prev events (ties by depth, then id); throws on a missing prev event or a cycle. */
function topologicalOrder(events: ReadonlyMap<string, RoomEvent>): string[] {
  const waiting = new Map<string, number>();
  const children = new Map<string, string[]>();
  for (const e of events.values()) {
    let n = 0;
    for (const p of new Set(e.prev_events)) {
      if (!events.has(p)) throw new Error(`${e.event_id} cites ${p}, which is not given`);
      n += 1;
      const list = children.get(p) ?? [];
      list.push(e.event_id);
      children.set(p, list);
    }
    waiting.set(e.event_id, n);
  }
  const ready = [...waiting].filter(([, n]) => n === 0).map(([id]) => id);
  const byDepth = (a: string, b: string) => events.get(a)!.depth - events.get(b)!.depth || (a < b ? -1 : a > b ? 1 : 0);
  const out: string[] = [];
  while (ready.length > 0) {
    ready.sort(byDepth);
    const id = ready.shift()!;
    out.push(id);
    for (const child of children.get(id) ?? []) {
      const n = waiting.get(child)! - 1;
      waiting.set(child, n);
      if (n === 0) ready.push(child);
    }
  }
  if (out.length !== events.size) throw new Error('the prev_events graph has a cycle');
  return out;
}
