// Builds RoomEvents for authorization and state-resolution tests: readable ids, automatic
// timestamps and depths, auth_events and prev_events given by id.

import { authTypesForEvent } from '../../src/protocol/auth-events.js';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../src/protocol/events.js';
import type { JsonObject } from '../../src/protocol/json.js';
import type { RoomVersion } from '../../src/protocol/room-versions.js';

export interface EventSpec {
  id?: string;
  type: string;
  sender: string;
  state_key?: string;
  content?: JsonObject;
  auth_events?: string[];
  prev_events?: string[];
  origin_server_ts?: number;
  depth?: number;
  redacts?: string;
}

export const ROOM_ID = '!room:example.org';

export class EventFactory {
  private counter = 0;
  private ts = 1_000;

  constructor(readonly roomId: string = ROOM_ID) {}

  make(spec: EventSpec): RoomEvent {
    this.counter += 1;
    this.ts += 1;
    return {
      event_id: spec.id ?? `$e${this.counter}`,
      room_id: this.roomId,
      sender: spec.sender,
      type: spec.type,
      ...(spec.state_key !== undefined ? { state_key: spec.state_key } : {}),
      content: spec.content ?? {},
      origin_server_ts: spec.origin_server_ts ?? this.ts,
      depth: spec.depth ?? this.counter,
      auth_events: spec.auth_events ?? [],
      prev_events: spec.prev_events ?? [],
      ...(spec.redacts !== undefined ? { redacts: spec.redacts } : {}),
    };
  }
}

/** What RoomGraph resolves with: the states after several prev events → the state before. */
export type GraphResolver = (
  sets: readonly StateMap[],
  source: { getEvents(ids: readonly string[]): ReadonlyMap<string, RoomEvent> },
) => Promise<Map<StateKey, string>>;

/**
 * A room's event DAG for state-resolution tests. Each added event gets, unless its spec names
 * them, auth_events selected from the state before it (the resolution of its prev events'
 * states) and a depth one past its deepest prev event. Events are not authorized when added, so
 * a test can put events that the rules would reject into a state.
 */
export class RoomGraph {
  readonly events = new Map<string, RoomEvent>();
  private readonly after = new Map<string, Map<StateKey, string>>();

  constructor(
    readonly version: RoomVersion,
    private readonly resolve: GraphResolver,
    readonly factory: EventFactory = new EventFactory(),
  ) {}

  getEvents(ids: readonly string[]): Map<string, RoomEvent> {
    const out = new Map<string, RoomEvent>();
    for (const id of ids) {
      const ev = this.events.get(id);
      if (ev !== undefined) out.set(id, ev);
    }
    return out;
  }

  /** The state after an added event. */
  stateAfter(id: string): Map<StateKey, string> {
    const state = this.after.get(id);
    if (state === undefined) throw new Error(`no event ${id} in the graph`);
    return new Map(state);
  }

  /** The state before an event with these prev events. */
  async stateBefore(prevEvents: readonly string[]): Promise<Map<StateKey, string>> {
    if (prevEvents.length === 0) return new Map();
    if (prevEvents.length === 1) return this.stateAfter(prevEvents[0]!);
    return this.resolve(
      prevEvents.map((id) => this.stateAfter(id)),
      this,
    );
  }

  /** Adds an event after `prevEvents` (default: none) and returns it. */
  async add(spec: EventSpec, prevEvents: readonly string[] = []): Promise<RoomEvent> {
    const before = await this.stateBefore(prevEvents);
    const authEvents =
      spec.auth_events ??
      authTypesForEvent({ ...spec, content: spec.content ?? {} }, this.version)
        .map((k) => before.get(k))
        .filter((id): id is string => id !== undefined);
    const depth =
      spec.depth ?? Math.max(0, ...prevEvents.map((id) => this.events.get(id)?.depth ?? 0)) + 1;
    const ev = this.factory.make({
      ...spec,
      auth_events: authEvents,
      prev_events: [...prevEvents],
      depth,
    });
    if (this.events.has(ev.event_id)) throw new Error(`duplicate event id ${ev.event_id}`);
    this.events.set(ev.event_id, ev);
    if (ev.state_key !== undefined) before.set(stateKey(ev.type, ev.state_key), ev.event_id);
    this.after.set(ev.event_id, before);
    return ev;
  }

  /** Adds events one after another, the first after `prevEvents`; returns the last. */
  async chain(specs: readonly EventSpec[], prevEvents: readonly string[] = []): Promise<RoomEvent> {
    let prev = [...prevEvents];
    let last: RoomEvent | undefined;
    for (const spec of specs) {
      last = await this.add(spec, prev);
      prev = [last.event_id];
    }
    if (last === undefined) throw new Error('chain needs at least one event');
    return last;
  }
}

/** The union of the auth chains of `ids`, walked naively: what a store's getAuthChain answers. */
export function naiveAuthChain(events: ReadonlyMap<string, RoomEvent>, ids: readonly string[]): Set<string> {
  const out = new Set<string>();
  const stack = ids.flatMap((id) => events.get(id)?.auth_events ?? []);
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    stack.push(...(events.get(id)?.auth_events ?? []));
  }
  return out;
}
