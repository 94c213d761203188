// The state before an event, from the states after its prev events as stored (each event's
// state_after_nid), and the room's current state from the states after its forward extremities.
// One prev event: its snapshot is the state before, nothing read. Several with the same state:
// that snapshot again. Several that differ: state resolution over them, and the result is handed
// back with the input snapshot nearest to it and the entries that differ, so that it is stored as
// a small delta on that snapshot rather than in full.

import type { Kysely } from 'kysely';
import type { StateKey } from '../../protocol/events.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import { resolveState } from '../../protocol/state-res/index.js';
import { eventsByIds } from '../../storage/rooms/events.js';
import { readSnapshotStates, type SnapshotEvent, type SnapshotInfo, type StateKeyNids } from '../../storage/rooms/state-snapshots.js';
import type { Schema } from '../../storage/schema.js';
import type { RoomReader } from '../reader.js';
import { StoredStateResSource } from './event-source.js';

export interface StateAtDeps {
  readonly db: Kysely<Schema>;
  /** Its cache serves the events resolution reads, where it holds them. */
  readonly reader?: RoomReader;
  /** Told the state keys' nids that snapshots are read with. */
  readonly stateKeys?: StateKeyNids;
  /**
   * The source resolution reads through (of the same room), to share what it has read between
   * calls; a new one per call when not given.
   */
  readonly source?: StoredStateResSource;
}

/** The room whose state is asked for. */
export interface StateRoom {
  readonly roomId: string;
  readonly roomNid: number;
  readonly version: RoomVersion;
}

/** A state entry as stored: the event's id and its nid. */
export type StateEntryRef = SnapshotEvent;

/** A state: stateKey(type, state_key) → the event. */
export type StateEntries = ReadonlyMap<StateKey, StateEntryRef>;

/**
 * The state is a stored snapshot as it stands, so no new snapshot is needed: the state after the
 * one event given, after several that share it, or a resolution that gave one of its inputs.
 */
export interface StoredState {
  readonly kind: 'stored';
  readonly snapshotNid: number;
  /** Reads the snapshot's state (at most once; later calls share that read). */
  read(): Promise<StateEntries>;
}

/** One entry of a resolved state that differs from its base snapshot. */
export interface StateDeltaEntry {
  readonly key: StateKey;
  /** The state key's nid in event_state_keys. */
  readonly keyNid: number;
  /** The event at `key` in the resolved state; null when the resolved state has no such key. */
  readonly event: StateEntryRef | null;
}

/**
 * The state is new: the resolution of several differing states. Stored as a snapshot whose parent
 * is `base` and whose entries are `delta`.
 */
export interface ResolvedState {
  readonly kind: 'resolved';
  /** The whole resolved state. */
  readonly state: StateEntries;
  /** Of the input snapshots, the one with the fewest keys differing from `state`. */
  readonly base: SnapshotInfo;
  /** `state` against `base`: every key whose event differs, in no particular order. */
  readonly delta: readonly StateDeltaEntry[];
}

/**
 * The state is not known here: these of the given events are not stored in this room, or are
 * stored without a state after them (outliers, rejected events). The state must come from
 * elsewhere (asked of the server that sent the event).
 */
export interface UnknownState {
  readonly kind: 'unknown';
  readonly missing: readonly string[];
}

/** The state before an event (or after several events taken together): one of the three above. */
export type StateBefore = StoredState | ResolvedState | UnknownState;
/** The state after a room's forward extremities taken together. */
export type MergedState = StateBefore;

/** The state before an event whose prev events are `prevEventIds`. */
export async function stateBefore(deps: StateAtDeps, room: StateRoom, prevEventIds: readonly string[]): Promise<StateBefore> {
  return stateAfterAll(deps, room, prevEventIds);
}

/**
 * The room's current state over its forward extremities `extremityIds`: the resolution of the
 * states after them, as for the state before an event that cites them all.
 */
export async function resolveCurrentState(deps: StateAtDeps, room: StateRoom, extremityIds: readonly string[]): Promise<MergedState> {
  return stateAfterAll(deps, room, extremityIds);
}

/** The state after all of `eventIds` taken together. */
async function stateAfterAll(deps: StateAtDeps, room: StateRoom, eventIds: readonly string[]): Promise<MergedState> {
  if (eventIds.length === 0) throw new Error(`state of room ${room.roomId}: no events to take the state after`);
  const snapshots = await snapshotsAfter(deps.db, room, eventIds);
  if (!Array.isArray(snapshots)) return snapshots;
  const distinct = [...new Set(snapshots)];
  if (distinct.length === 1) return storedState(deps, distinct[0]!);

  const read = await readSnapshotStates(deps.db, distinct);
  deps.stateKeys?.remember(read.keyNids);
  const states = distinct.map((nid) => read.states.get(nid)!);
  // Keys whose event is not the same in every state: only these can differ in the resolution.
  const differing = differingKeys(states.map((s) => s.events));
  if (differing.size === 0) return storedState(deps, distinct[0]!, states[0]!.events);

  const source = deps.source ?? new StoredStateResSource(deps, room);
  // The inputs by event id: copies of the first but at the differing keys.
  const first = idsOf(states[0]!.events);
  const sets = states.map((s, i) => {
    if (i === 0) return first;
    const ids = new Map(first);
    for (const key of differing) {
      const ref = s.events.get(key);
      if (ref === undefined) ids.delete(key);
      else ids.set(key, ref.eventId);
    }
    return ids;
  });
  const resolvedIds = await resolveState(room.roomId, room.version, sets, source);

  // The resolved event at each differing key (every key else is as in every input).
  const resolvedAt = new Map<StateKey, StateEntryRef | null>();
  for (const key of differing) {
    const id = resolvedIds.get(key);
    if (id === undefined) {
      resolvedAt.set(key, null);
      continue;
    }
    const ref = states.map((s) => s.events.get(key)).find((r) => r?.eventId === id);
    if (ref === undefined) throw new Error(`state resolution in ${room.roomId} chose ${id}, which no input state holds at its key`);
    resolvedAt.set(key, ref);
  }

  let nearest = 0;
  let fewest = Infinity;
  for (let i = 0; i < states.length; i++) {
    let n = 0;
    for (const [key, ref] of resolvedAt) if ((states[i]!.events.get(key)?.nid ?? null) !== (ref?.nid ?? null)) n++;
    if (n < fewest) {
      fewest = n;
      nearest = i;
    }
  }
  const base = states[nearest]!;
  if (fewest === 0) return storedState(deps, base.info.nid, base.events);
  const state = new Map(base.events);
  const delta: StateDeltaEntry[] = [];
  for (const [key, ref] of resolvedAt) {
    if ((base.events.get(key)?.nid ?? null) === (ref?.nid ?? null)) continue;
    if (ref === null) state.delete(key);
    else state.set(key, ref);
    delta.push({ key, keyNid: read.keyNids.get(key)!, event: ref });
  }
  return { kind: 'resolved', state, base: base.info, delta };
}

/**
 * The state_after_nid of each of `eventIds`, in order; or, if some have none (not stored, of
 * another room, an outlier or rejected), which.
 */
async function snapshotsAfter(db: Kysely<Schema>, room: StateRoom, eventIds: readonly string[]): Promise<number[] | UnknownState> {
  const after = new Map<string, number>();
  for (const row of await eventsByIds(db, [...new Set(eventIds)])) {
    if (Number(row.room_nid) !== room.roomNid || row.state_after_nid === null) continue;
    if (row.status === 'rejected' || row.status === 'outlier') continue;
    after.set(row.event_id, Number(row.state_after_nid));
  }
  const missing = eventIds.filter((id) => !after.has(id));
  if (missing.length > 0) return { kind: 'unknown', missing: [...new Set(missing)] };
  return eventIds.map((id) => after.get(id)!);
}

function storedState(deps: StateAtDeps, snapshotNid: number, known?: StateEntries): StoredState {
  let read: Promise<StateEntries> | undefined = known === undefined ? undefined : Promise.resolve(known);
  return {
    kind: 'stored',
    snapshotNid,
    read: () => (read ??= readSnapshotStates(deps.db, [snapshotNid]).then((r) => r.states.get(snapshotNid)!.events)),
  };
}

function idsOf(entries: StateEntries): Map<StateKey, string> {
  const out = new Map<StateKey, string>();
  for (const [key, ref] of entries) out.set(key, ref.eventId);
  return out;
}

/** The keys whose event differs between some of the states, a key missing from some included. */
function differingKeys(states: readonly ReadonlyMap<StateKey, StateEntryRef>[]): Set<StateKey> {
  const out = new Set<StateKey>();
  const first = states[0]!;
  for (const other of states.slice(1)) {
    for (const [key, ref] of other) if (first.get(key)?.nid !== ref.nid) out.add(key);
    for (const key of first.keys()) if (!other.has(key)) out.add(key);
  }
  return out;
}
