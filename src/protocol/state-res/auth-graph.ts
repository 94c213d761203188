// The event fetcher that state resolution is given, and the working set of one resolution read
// through it (AuthGraph: the events loaded so far, linked by their auth events). Events are
// fetched in batches; an id the source cannot supply (or that belongs to another room) is
// remembered as missing and treated as absent from then on.

import type { RoomEvent } from '../events.js';

export interface StateResEventSource {
  /**
   * Fetches events by id; missing ids are simply absent from the result. May be sync or async.
   * Called with whole batches (possibly thousands of ids); a store may split them as it likes.
   */
  getEvents(
    ids: readonly string[],
  ): Promise<ReadonlyMap<string, RoomEvent>> | ReadonlyMap<string, RoomEvent>;
  /**
   * Optional: the full auth chain ids of a set of events, if the store can answer faster than
   * walking. That is the union of each event's auth chain (its auth events, theirs, and so on),
   * which does not include a given event itself unless another given event's chain reaches it.
   */
  getAuthChain?(ids: readonly string[]): Promise<ReadonlySet<string>> | ReadonlySet<string>;
  /**
   * Optional: which of the given events were rejected. The iterative auth checks never take a
   * missing state entry from a rejected auth event. Without it, no event counts as rejected.
   */
  rejectedAmong?(ids: readonly string[]): Promise<ReadonlySet<string>> | ReadonlySet<string>;
}

/** How many loop iterations run between yields to the event loop. */
export const YIELD_EVERY = 500;

export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The events one resolution has loaded, which of them are missing, and which were rejected. */
export class AuthGraph {
  private readonly events = new Map<string, RoomEvent>();
  private readonly missing = new Set<string>();
  private readonly rejected = new Set<string>();
  private readonly rejectionKnown = new Set<string>();

  constructor(
    readonly roomId: string,
    private readonly source: StateResEventSource,
  ) {}

  get(id: string): RoomEvent | undefined {
    return this.events.get(id);
  }

  /** The event, which must have been loaded; throws on a programming error. */
  require(id: string): RoomEvent {
    const ev = this.events.get(id);
    if (ev === undefined) throw new Error(`state resolution: event ${id} was not loaded`);
    return ev;
  }

  /** Fetches, in one call, every id not yet known. */
  async load(ids: Iterable<string>): Promise<void> {
    const wanted: string[] = [];
    const seen = new Set<string>();
    for (const id of ids) {
      if (seen.has(id) || this.events.has(id) || this.missing.has(id)) continue;
      seen.add(id);
      wanted.push(id);
    }
    if (wanted.length === 0) return;
    const found = await this.source.getEvents(wanted);
    for (const id of wanted) {
      const ev = found.get(id);
      // An event from another room can never take part in this room's state.
      if (ev !== undefined && ev.event_id === id && ev.room_id === this.roomId) {
        this.events.set(id, ev);
      } else {
        this.missing.add(id);
      }
    }
  }

  /** Loads the auth events of every given (already loaded) event. */
  async loadAuthEvents(ids: Iterable<string>): Promise<void> {
    const wanted: string[] = [];
    for (const id of ids) {
      const ev = this.events.get(id);
      if (ev !== undefined) wanted.push(...ev.auth_events);
    }
    await this.load(wanted);
  }

  /** Asks the source, in one call, which of the given ids not yet asked about were rejected. */
  async loadRejections(ids: Iterable<string>): Promise<void> {
    if (this.source.rejectedAmong === undefined) return;
    const wanted: string[] = [];
    for (const id of ids) {
      if (this.rejectionKnown.has(id)) continue;
      this.rejectionKnown.add(id);
      wanted.push(id);
    }
    if (wanted.length === 0) return;
    for (const id of await this.source.rejectedAmong(wanted)) this.rejected.add(id);
  }

  /** Whether the source named `id` rejected (ask `loadRejections` first). */
  isRejected(id: string): boolean {
    return this.rejected.has(id);
  }

  /**
   * v12 rooms: the create event the room id names (no event cites it), once `loadCreate` has run;
   * undefined in earlier versions.
   */
  create: RoomEvent | undefined;

  /** From v12, loads the create event the room id names. */
  async loadCreate(version: { readonly createEventRoomId: boolean }): Promise<void> {
    if (!version.createEventRoomId || this.create !== undefined || !this.roomId.startsWith('!')) return;
    const id = '$' + this.roomId.slice(1);
    await this.load([id]);
    this.create = this.events.get(id);
  }

  /** The first auth event of `ev` with the given type and an empty state key, if loaded. */
  authEventOfType(ev: RoomEvent, type: string): RoomEvent | undefined {
    for (const id of ev.auth_events) {
      const a = this.events.get(id);
      if (a !== undefined && a.type === type && a.state_key === '') return a;
    }
    // v12: no event cites the create event; the room id names it.
    return type === 'm.room.create' ? this.create : undefined;
  }
}
