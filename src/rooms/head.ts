// A room's head: what deciding the room's next event needs, held in memory. The current state (as
// the RoomEvents authorization reads), the forward extremities, the current state snapshot, and a
// summary of the state. Accepting an event advances the head at once (inside the room's queue, see
// room-queue.ts), so each event is decided against the state its predecessors left; the writer
// stores them in that order. A head whose write failed is marked dead and reloaded from the
// database.

import { authStateKeysForEvent, type AuthEventSubject } from '../protocol/auth-events.js';
import type { RoomEvent, StateKey, StateLookup } from '../protocol/events.js';
import { parseStateKey, stateKey } from '../protocol/events.js';
import { redactEvent } from '../protocol/redaction.js';
import type { JsonObject } from '../protocol/json.js';
import type { RoomVersion } from '../protocol/room-versions.js';
import { planSnapshot, type SnapshotInfo } from '../storage/rooms/state-snapshots.js';
import type { StateChange } from './persist-event.js';

/** How member keys begin: stateKey('m.room.member', userId) is this and the user id. */
export const MEMBER_KEY_PREFIX = stateKey('m.room.member', '');

/** The redacted form of a RoomEvent (content reduced by the room version's rules). */
export function redactedRoomEvent(event: RoomEvent, head: { readonly version: RoomVersion }): RoomEvent {
  return { ...event, content: redactEvent(event, head.version).content };
}

/**
 * The state keys deciding an event reads of its room's state: its auth events' keys and, for a
 * state event, its own (what it replaces).
 */
export function keysToDecide(event: AuthEventSubject, version: RoomVersion): StateKey[] {
  const keys = authStateKeysForEvent(event, version);
  if (event.state_key !== undefined) keys.push(stateKey(event.type, event.state_key));
  return keys;
}

/**
 * v12 rooms: the room's create event, which no event cites but every check against auth events
 * reads (the room id names it); undefined before v12.
 */
export function v12Create(head: { readonly version: RoomVersion; get(type: string, key?: string): RoomEvent | undefined }): RoomEvent | undefined {
  return head.version.createEventRoomId ? head.get('m.room.create') : undefined;
}

/** Most prev events one event cites (server-server API, "PDUs"): more extremities merge over several events. */
export const MAX_PREV_EVENTS = 20;

/** An event as later events refer to it. */
export interface EventRef {
  readonly eventId: string;
  readonly depth: number;
  /** The event's row id: known for stored events, set by the writer for new ones. */
  nid: number | undefined;
  /** v1–v2 rooms cite events with their reference hash (unpadded base64). */
  readonly referenceHash?: string;
}

/** A state snapshot, written or still to be written. */
export interface SnapshotRef {
  /** Set once the snapshot's row exists. */
  info: SnapshotInfo | undefined;
  /** The snapshot this one is a delta against; null for a full snapshot. */
  readonly parent: SnapshotRef | null;
  readonly chainLength: number;
  /**
   * The keys it has entries for (every key for a full snapshot), written or not: what the snapshot
   * policy weighs (planSnapshot).
   */
  readonly keys: readonly StateKey[];
  /**
   * What to write: the entries of a delta (null: the key left the state), or every entry of a full
   * snapshot; empty once written or loaded.
   */
  readonly entries: readonly (readonly [StateKey, EventRef | null])[];
}

/** The summary columns of the rooms table, as they stand after some event. */
export interface RoomSummary {
  name: string | null;
  topic: string | null;
  canonical_alias: string | null;
  avatar_url: string | null;
  join_rule: string | null;
  history_visibility: string | null;
  guest_access: string | null;
  room_type: string | null;
  joined_members: number;
  invited_members: number;
}

/**
 * A snapshot of `whole`, the state `parent` held with the `changed` keys changed: a delta on top
 * of `parent` (or of one of its ancestors, absorbing small deltas), or a full snapshot, as the
 * snapshot policy (planSnapshot) decides.
 */
export function snapshotOn(
  parent: SnapshotRef | null,
  changed: readonly StateKey[],
  whole: ReadonlyMap<StateKey, EventRef>,
): SnapshotRef {
  const plan = planSnapshot(parent, changed, whole.size);
  if (plan.parent === null) return { info: undefined, parent: null, chainLength: 0, keys: [...whole.keys()], entries: [...whole] };
  // A delta's keys hold their current events; a key the state no longer has, a removal.
  return {
    info: undefined,
    parent: plan.parent,
    chainLength: plan.parent.chainLength + 1,
    keys: plan.keys,
    entries: plan.keys.map((k) => [k, whole.get(k) ?? null] as const),
  };
}

/** A stored snapshot as a parent for new ones (its own chain is not known here). */
export function storedSnapshot(info: SnapshotInfo): SnapshotRef {
  return { info, parent: null, chainLength: info.chainLength, keys: [], entries: [] };
}

/** Thrown when a state event the head holds by reference only is read before it was loaded. */
export class StateNotLoaded extends Error {
  constructor(readonly keys: readonly StateKey[]) {
    super(`room state not loaded: ${keys.length} key(s)`);
  }
}

/**
 * State every head keeps parsed: what the auth rules read of every event (create, power levels,
 * join rules), and what the room summary and stripped state show.
 */
const PINNED_KEYS: ReadonlySet<StateKey> = new Set(
  [
    'm.room.create',
    'm.room.power_levels',
    'm.room.join_rules',
    'm.room.history_visibility',
    'm.room.guest_access',
    'm.room.name',
    'm.room.topic',
    'm.room.avatar',
    'm.room.canonical_alias',
    'm.room.encryption',
  ].map((t) => stateKey(t, '')),
);

/** Other state events (members, mostly) a head keeps parsed, least recently read dropped first. */
export const LOADED_STATE_LIMIT = 1024;

/** Reads current state events by reference, in the form authorization reads them; by event id. */
export type StateEventLoader = (head: RoomHead, refs: readonly EventRef[]) => Promise<Map<string, RoomEvent>>;

/**
 * The parsed part of a head's current state. Pinned keys are always here; other keys are loaded
 * on demand (RoomHead.load) and kept up to a bound. Reading a key the state holds but that is not
 * loaded throws StateNotLoaded: a decision must load what it reads first.
 */
export class HeadState implements StateLookup {
  private readonly kept = new Map<StateKey, RoomEvent>();
  private readonly loaded = new Map<StateKey, RoomEvent>();

  constructor(
    private readonly refs: ReadonlyMap<StateKey, EventRef>,
    /** Keep every key parsed (v1–v2 rooms: their events are cited by hashes of the whole PDU). */
    private readonly pinAll: boolean,
    private readonly limit: number,
  ) {}

  get(key: StateKey): RoomEvent | undefined {
    const kept = this.kept.get(key);
    if (kept !== undefined) return kept;
    const e = this.loaded.get(key);
    if (e !== undefined) {
      // Most recently read last; the order matters only once the bound is near.
      if (this.loaded.size * 2 > this.limit) {
        this.loaded.delete(key);
        this.loaded.set(key, e);
      }
      return e;
    }
    if (this.refs.has(key)) throw new StateNotLoaded([key]);
    return undefined;
  }

  /** Whether the event at `key` is always kept parsed. */
  pinned(key: StateKey): boolean {
    return this.pinAll || PINNED_KEYS.has(key);
  }

  /** Whether `key` can be read without loading: parsed here, or not in the state at all. */
  has(key: StateKey): boolean {
    return this.kept.has(key) || this.loaded.has(key) || !this.refs.has(key);
  }

  /** Parsed events of the state (not every event of a big room: see RoomHead.read). */
  get parsedCount(): number {
    return this.kept.size + this.loaded.size;
  }

  /** Records the event at `key`; past the bound, drops the least recently read others but `key`. */
  set(key: StateKey, event: RoomEvent): void {
    this.put(key, event);
    this.trim([key]);
  }

  /** Records several events; the bound drops none of them, nor of `keep` (a decision is about to read them). */
  setAll(events: ReadonlyMap<StateKey, RoomEvent>, keep: readonly StateKey[]): void {
    for (const [key, event] of events) this.put(key, event);
    this.trim(keep);
  }

  private put(key: StateKey, event: RoomEvent): void {
    if (this.pinned(key)) {
      this.kept.set(key, event);
      return;
    }
    // Most recently set last.
    this.loaded.delete(key);
    this.loaded.set(key, event);
  }

  private trim(keep: readonly StateKey[]): void {
    if (this.loaded.size <= this.limit) return;
    for (const k of this.loaded.keys()) {
      if (this.loaded.size <= this.limit) break;
      // An event not yet stored cannot be read back: it stays until it is.
      if (this.refs.get(k)?.nid === undefined || keep.includes(k)) continue;
      this.loaded.delete(k);
    }
  }

  /** Replaces a parsed event (a redacted form); false when `key` is not parsed here. */
  replace(key: StateKey, event: RoomEvent): boolean {
    if (this.kept.has(key)) this.kept.set(key, event);
    else if (this.loaded.has(key)) this.loaded.set(key, event);
    else return false;
    return true;
  }

  delete(key: StateKey): void {
    this.kept.delete(key);
    this.loaded.delete(key);
  }

  /** The parsed event at `key`, without counting it as read and without throwing. */
  peek(key: StateKey): RoomEvent | undefined {
    return this.kept.get(key) ?? this.loaded.get(key);
  }
}

export class RoomHead {
  /** Set once the room's row exists. */
  roomNid: number | undefined;
  /** The current state's events as snapshots refer to them: every key. */
  readonly stateRefs = new Map<StateKey, EventRef>();
  /**
   * The current state as authorization reads it (redacted events in their redacted form): pinned
   * keys and those loaded (load) before being read.
   */
  readonly state: HeadState;
  /** Every member's current membership, by user id, whether their event is loaded or not. */
  private readonly members = new Map<string, string>();
  /** Current state events redacted while not loaded: loading gives their redacted form. */
  private readonly redactedHere = new Set<string>();
  /** Reads events the state holds by reference only; set by whoever keeps the head. */
  loader: StateEventLoader | undefined;
  extremities: EventRef[] = [];
  snapshot: SnapshotRef | null = null;
  /** How many forward_extremities rows the room has in the database. */
  storedExtremityCount = 0;
  joined = 0;
  invited = 0;
  /** False once a write built on this head failed, or the head was dropped: it must not be built on again. */
  live = true;
  /** Writes queued on this head and not yet finished. */
  pending = 0;
  /** Events built on this head and not yet stored, by id: resolve once stored. */
  readonly unwritten = new Map<string, Promise<string>>();

  constructor(
    /** Fixed, but for a new v12 room's head: its create event, once built, names the room. */
    public roomId: string,
    readonly version: RoomVersion,
    loadedLimit = LOADED_STATE_LIMIT,
  ) {
    this.state = new HeadState(this.stateRefs, version.eventIdFormat === 'v1', loadedLimit);
  }

  /** The current state event at (type, key); throws StateNotLoaded when it is held but not loaded. */
  get(type: string, key = ''): RoomEvent | undefined {
    return this.state.get(stateKey(type, key));
  }

  /** A user's current membership (`leave` without a member event); never needs loading. */
  membership(userId: string): string {
    return this.members.get(userId) ?? 'leave';
  }

  /** Users with a member event in the current state, and their memberships. */
  memberships(): ReadonlyMap<string, string> {
    return this.members;
  }

  /** Of `keys`, those the state holds but has not loaded. */
  missing(keys: Iterable<StateKey>): StateKey[] {
    const out: StateKey[] = [];
    for (const k of keys) if (!this.state.has(k)) out.push(k);
    return out;
  }

  /**
   * The current state events at `keys` (absent keys left out), reading those not loaded without
   * keeping them: for reads of many members at once.
   */
  async read(keys: readonly StateKey[]): Promise<Map<StateKey, RoomEvent>> {
    const out = new Map<StateKey, RoomEvent>();
    const wanted: [StateKey, EventRef][] = [];
    for (const key of keys) {
      const e = this.state.peek(key);
      if (e !== undefined) out.set(key, e);
      else {
        const ref = this.stateRefs.get(key);
        if (ref !== undefined) wanted.push([key, ref]);
      }
    }
    if (wanted.length === 0) return out;
    // Unloaded events are stored ones (set() keeps unstored events), but a write may be finishing.
    if (wanted.some(([, r]) => r.nid === undefined)) await Promise.allSettled([...this.unwritten.values()]);
    if (this.loader === undefined) throw new Error(`room ${this.roomId}: no loader for its state`);
    const found = await this.loader(this, wanted.map(([, r]) => r));
    for (const [key, ref] of wanted) {
      const e = found.get(ref.eventId);
      if (e === undefined) throw new Error(`state event ${ref.eventId} of room ${this.roomId} is missing`);
      out.set(key, this.redactedHere.has(ref.eventId) ? redactedRoomEvent(e, this) : e);
    }
    return out;
  }

  /**
   * Loads the state events at `keys` that are held but not loaded, so that reading any of `keys`
   * does not throw until more is loaded or set.
   */
  async load(keys: readonly StateKey[]): Promise<void> {
    const missing = this.missing(keys);
    if (missing.length === 0) return;
    const found = await this.read(missing);
    // The state may have moved on while reading: only what is still current is kept.
    for (const [key, e] of found) if (this.stateRefs.get(key)?.eventId !== e.event_id || this.state.has(key)) found.delete(key);
    this.state.setAll(found, keys);
  }

  /**
   * The extremities a new event cites: all of them, or the deepest MAX_PREV_EVENTS (the rest are
   * merged by later events).
   */
  citedExtremities(): EventRef[] {
    if (this.extremities.length <= MAX_PREV_EVENTS) return this.extremities;
    return [...this.extremities].sort((a, b) => b.depth - a.depth).slice(0, MAX_PREV_EVENTS);
  }

  /** The extremities once an event citing `cited` is accepted as `ref` (null: the event is not one). */
  extremitiesAfter(cited: readonly EventRef[] | readonly string[], ref: EventRef | null): EventRef[] {
    const gone = new Set(cited.map((c) => (typeof c === 'string' ? c : c.eventId)));
    const out = this.extremities.filter((r) => !gone.has(r.eventId));
    if (ref !== null) out.push(ref);
    return out;
  }

  /**
   * Makes `event` the current state at `key` and composes the snapshot after it, on top of the
   * head's current snapshot. Returns the change and the new snapshot (also the head's now).
   */
  applyState(key: StateKey, event: RoomEvent, ref: EventRef): { change: StateChange; snapshot: SnapshotRef } {
    const change = this.setState(key, event, ref);
    this.snapshot = snapshotOn(this.snapshot, [key], this.stateRefs);
    return { change, snapshot: this.snapshot };
  }

  /** Records `event` as the current state at its key and keeps the member counts. */
  setState(key: StateKey, event: RoomEvent, ref: EventRef): StateChange {
    const prevRef = this.stateRefs.get(key) ?? null;
    const prevMembership = this.memberAt(key);
    this.stateRefs.set(key, ref);
    this.state.set(key, event);
    if (event.type === 'm.room.member' && event.state_key !== undefined) {
      const m = event.content.membership;
      this.setMembership(event.state_key, typeof m === 'string' ? m : undefined);
    }
    return { key, event, ref, prevRef, prevMembership };
  }

  /** Records a current state event by reference only (loaded when read); `membership` for member events. */
  holdState(key: StateKey, ref: EventRef, membership?: string): void {
    this.stateRefs.set(key, ref);
    if (membership !== undefined) this.setMembership(parseStateKey(key).stateKey, membership);
  }

  /** Removes a key from the current state (a resolution dropped it). */
  removeState(key: StateKey): StateChange | undefined {
    const prevRef = this.stateRefs.get(key);
    if (prevRef === undefined) return undefined;
    const prevMembership = this.memberAt(key);
    if (prevMembership !== null) this.setMembership(parseStateKey(key).stateKey, undefined);
    this.state.delete(key);
    this.stateRefs.delete(key);
    return { key, event: null, ref: null, prevRef, prevMembership };
  }

  /** Replaces a current state event by its redacted form (same id); false when it is not current. */
  replaceStateEvent(key: StateKey, event: RoomEvent): boolean {
    if (this.stateRefs.get(key)?.eventId !== event.event_id) return false;
    // Redaction keeps a member event's membership: the counts stay.
    if (!this.state.replace(key, event)) this.redactedHere.add(event.event_id);
    return true;
  }

  /** The membership held at `key` when it is a member key, else null. */
  private memberAt(key: StateKey): string | null {
    if (!key.startsWith(MEMBER_KEY_PREFIX)) return null;
    return this.members.get(key.slice(MEMBER_KEY_PREFIX.length)) ?? null;
  }

  private setMembership(userId: string, membership: string | undefined): void {
    this.count(this.members.get(userId), -1);
    if (membership === undefined) this.members.delete(userId);
    else this.members.set(userId, membership);
    this.count(membership, 1);
  }

  private count(membership: unknown, delta: number): void {
    if (membership === 'join') this.joined += delta;
    else if (membership === 'invite') this.invited += delta;
  }

  summary(): RoomSummary {
    const str = (type: string, field: string): string | null => {
      const v = this.get(type)?.content[field];
      return typeof v === 'string' ? v : null;
    };
    return {
      name: str('m.room.name', 'name'),
      topic: str('m.room.topic', 'topic'),
      canonical_alias: str('m.room.canonical_alias', 'alias'),
      avatar_url: str('m.room.avatar', 'url'),
      join_rule: str('m.room.join_rules', 'join_rule'),
      history_visibility: str('m.room.history_visibility', 'history_visibility'),
      guest_access: str('m.room.guest_access', 'guest_access'),
      room_type: str('m.room.create', 'type'),
      joined_members: this.joined,
      invited_members: this.invited,
    };
  }

  /** Stripped state a user is shown with an invite or knock (the client API's "stripped state"). */
  strippedState(extra: readonly RoomEvent[] = []): JsonObject[] {
    const types = [
      'm.room.create',
      'm.room.join_rules',
      'm.room.canonical_alias',
      'm.room.avatar',
      'm.room.name',
      'm.room.encryption',
      'm.room.topic',
    ];
    const out: JsonObject[] = [];
    const strip = (e: RoomEvent): JsonObject => ({ type: e.type, state_key: e.state_key ?? '', content: e.content, sender: e.sender });
    for (const t of types) {
      const e = this.get(t);
      if (e !== undefined) out.push(strip(e));
    }
    for (const e of extra) out.push(strip(e));
    return out;
  }
}
