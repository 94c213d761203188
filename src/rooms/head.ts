// A room's head: what deciding the room's next event needs, held in memory. The current state (as
// the RoomEvents authorization reads), the forward extremities, the current state snapshot, and a
// summary of the state. Accepting an event advances the head at once (inside the room's queue, see
// room-queue.ts), so each event is decided against the state its predecessors left; the writer
// stores them in that order. A head whose write failed is marked dead and reloaded from the
// database.

import type { RoomEvent, StateKey } from '../protocol/events.js';
import { stateKey } from '../protocol/events.js';
import type { JsonObject } from '../protocol/json.js';
import type { RoomVersion } from '../protocol/room-versions.js';
import { planSnapshot, type SnapshotInfo } from '../storage/rooms/state-snapshots.js';
import type { StateChange } from './persist-event.js';

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

export class RoomHead {
  /** Set once the room's row exists. */
  roomNid: number | undefined;
  /** The current state as authorization reads it (redacted events in their redacted form). */
  readonly state = new Map<StateKey, RoomEvent>();
  /** The current state's events as snapshots refer to them. */
  readonly stateRefs = new Map<StateKey, EventRef>();
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
    readonly roomId: string,
    readonly version: RoomVersion,
  ) {}

  get(type: string, key = ''): RoomEvent | undefined {
    return this.state.get(stateKey(type, key));
  }

  membership(userId: string): string {
    const m = this.get('m.room.member', userId)?.content.membership;
    return typeof m === 'string' ? m : 'leave';
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
    const prevRef = this.stateRefs.get(key) ?? null;
    const prevEvent = this.setState(key, event, ref) ?? null;
    this.snapshot = snapshotOn(this.snapshot, [key], this.stateRefs);
    return { change: { key, event, ref, prevEvent, prevRef }, snapshot: this.snapshot };
  }

  /** Records `event` as the current state at its key and keeps the member counts. */
  setState(key: StateKey, event: RoomEvent, ref: EventRef): RoomEvent | undefined {
    const prior = this.state.get(key);
    if (event.type === 'm.room.member') {
      this.count(prior?.content.membership, -1);
      this.count(event.content.membership, 1);
    }
    this.state.set(key, event);
    this.stateRefs.set(key, ref);
    return prior;
  }

  /** Removes a key from the current state (a resolution dropped it). */
  removeState(key: StateKey): RoomEvent | undefined {
    const prior = this.state.get(key);
    if (prior === undefined) return undefined;
    if (prior.type === 'm.room.member') this.count(prior.content.membership, -1);
    this.state.delete(key);
    this.stateRefs.delete(key);
    return prior;
  }

  /** Replaces a current state event by its redacted form (same id); false when it is not current. */
  replaceStateEvent(key: StateKey, event: RoomEvent): boolean {
    const prior = this.state.get(key);
    if (prior?.event_id !== event.event_id) return false;
    if (event.type === 'm.room.member') {
      this.count(prior.content.membership, -1);
      this.count(event.content.membership, 1);
    }
    this.state.set(key, event);
    return true;
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
