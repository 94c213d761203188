// Deciding a received event, inside its room's queue: checks 4–6 of the server-server API's
// "Checks performed on receipt of a PDU", and the PersistEvent that says how it is stored.
//   4. Authorized by its own auth_events, else rejected.
//   5. Authorized by the state before it (its prev events' states, resolved), else rejected.
//   6. Authorized by the room's current state, else soft-failed: stored, never served, not an
//      extremity.
// An accepted event moves the forward extremities (it replaces the prev events it cites), and the
// current state becomes the resolution of the extremities' states. Everything the decision needs
// from other servers was fetched before the task was queued (receive.ts); here only the database
// is read, and only off the fast path: an event citing exactly the room's extremities is decided
// against the head in memory, as a local event is.

import type { Kysely } from 'kysely';
import { authStateFromEvents, checkAuthEventsList } from '../../protocol/auth-events.js';
import { checkEventAuth, redactionApplies } from '../../protocol/event-auth.js';
import { parseStateKey, referenceIds, stateKey, type Pdu, type RoomEvent, type StateKey, type StateLookup } from '../../protocol/events.js';
import type { JsonObject } from '../../protocol/json.js';
import { resolveState } from '../../protocol/state-res/index.js';
import type { Schema } from '../../storage/schema.js';
import { getSnapshotInfo, readSnapshot, readSnapshotsSubset, STATE_CHAIN_LIMIT } from '../../storage/rooms/state-snapshots.js';
import { refOf } from '../head-loader.js';
import { keysToDecide, v12Create, redactedRoomEvent, snapshotOn, storedSnapshot, type EventRef, type RoomHead, type SnapshotRef } from '../head.js';
import type { CurrentStateChange, PersistEvent, StateChange } from '../persist-event.js';
import type { RoomReader } from '../reader.js';
import { authRoomEventOf, roomEventOf, type StoredEvent } from '../stored-event.js';
import { StoredStateSource } from './state-source.js';

/** A received PDU that passed checks 1–3. */
export interface Candidate {
  readonly pdu: Pdu;
  readonly json: string;
  /** The event as authorization reads it (redacted when its content hash did not match). */
  readonly event: RoomEvent;
  readonly ref: EventRef;
}

/** What was gathered for the decision before the room's queue was entered. */
export interface Gathered {
  /** The event's auth events that are stored, by id (missing ones are absent). */
  readonly authEvents: ReadonlyMap<string, StoredEvent>;
  /** The state before the event as another server gave it, when its prev events' states could not be had. */
  readonly stateOverride?: ReadonlyMap<StateKey, StoredEvent>;
  /** Prev events this server does not have (they become backward extremities). */
  readonly missingPrev: readonly string[];
  /** A stored event already cites this one (it arrived late): it cannot be an extremity. */
  readonly citedByStored: boolean;
  /** The event was a backward extremity: a stored event cites it and it was missing until now. */
  readonly fillsBackward: boolean;
  /** A stored redaction of this event that takes effect on it. */
  readonly redactedBy?: string;
  /**
   * This server's own join, answered by a resident server (send_join): the state before it is
   * the answer's, and the state after it becomes the room's current state, its only forward
   * extremity the join. What this server knew of the room before is superseded; nothing is
   * soft-failed against it.
   */
  readonly joinedThrough?: boolean;
}

export interface DecideDeps {
  readonly db: Kysely<Schema>;
  readonly reader: RoomReader;
}

/** A state as decisions read it: events and their references, and where it is (or will be) stored. */
interface StateAt {
  readonly state: StateLookup;
  readonly refs: ReadonlyMap<StateKey, EventRef>;
  readonly snapshot: SnapshotRef | null;
}

function sameSet(a: readonly string[], b: readonly EventRef[]): boolean {
  if (a.length !== b.length) return false;
  const ids = new Set(b.map((r) => r.eventId));
  return a.every((id) => ids.has(id));
}

/**
 * v12: the room's create event, which no event cites: the head's, or before the head has state (a
 * join's answer) the one in the state given for the event.
 */
function createOf(head: RoomHead, g: { readonly stateOverride?: ReadonlyMap<StateKey, StoredEvent> }): RoomEvent | undefined {
  if (!head.version.createEventRoomId) return undefined;
  const held = v12Create(head);
  if (held !== undefined) return held;
  const given = g.stateOverride?.get(stateKey('m.room.create', ''));
  return given === undefined ? undefined : authRoomEventOf(given);
}

/** What every unit deciding `c` holds, whatever the decision. */
function unitBase(head: RoomHead, c: Candidate, redactedBy: string | undefined, backward: PersistEvent['backward']) {
  return {
    head,
    ref: c.ref,
    pdu: c.pdu,
    json: c.json,
    event: c.event,
    stateKey: c.event.state_key === undefined ? undefined : stateKey(c.event.type, c.event.state_key),
    txn: undefined,
    redactedBy,
    backward,
    streamOrdering: undefined,
  };
}

/** Decides `c` against the room's head, advancing the head when the event is accepted. */
export async function decideReceived(deps: DecideDeps, head: RoomHead, c: Candidate, g: Gathered): Promise<PersistEvent> {
  const version = head.version;
  const base = unitBase(head, c, g.redactedBy, g.missingPrev.length === 0 && !g.fillsBackward ? undefined : { add: g.missingPrev, remove: g.fillsBackward ? [c.ref.eventId] : [] });
  const refuse = (status: 'rejected' | 'soft_failed', reason: string | undefined, before: SnapshotRef | null, after: SnapshotRef | null): PersistEvent => ({
    ...base,
    status,
    rejectionReason: reason,
    position: 'none',
    snapshotBefore: before,
    snapshotAfter: after,
    unsigned: undefined,
    extremities: undefined,
    currentState: undefined,
    redactionTarget: undefined,
  });

  // 4. The auth events themselves (rule 2), then the rules against the state they make.
  const authEvents = [...g.authEvents.values()].map(authRoomEventOf);
  const listed = checkAuthEventsList(c.event, authEvents, version, { isRejected: (id) => g.authEvents.get(id)?.status === 'rejected' });
  if (!listed.allowed) return refuse('rejected', listed.reason, null, null);
  const byAuthEvents = checkEventAuth(c.event, authStateFromEvents(authEvents, createOf(head, g)), version);
  if (!byAuthEvents.allowed) return refuse('rejected', byAuthEvents.reason, null, null);

  // 5. The state before the event. What the checks against the head read is loaded first.
  await head.load(keysToDecide(c.event, version));
  const prevIds = referenceIds(c.pdu.prev_events);
  const fast = g.stateOverride === undefined && sameSet(prevIds, head.extremities);
  let before: StateAt;
  // Built only off the fast path: the one place the database is read.
  let source: StoredStateSource | undefined;
  const sourceOf = () => (source ??= new StoredStateSource(deps.db, deps.reader, head, [c]));
  if (fast) {
    before = { state: head.state, refs: head.stateRefs, snapshot: head.snapshot };
  } else {
    // Prev events decided earlier may still be on their way to the database.
    await Promise.allSettled([...head.unwritten.values()]);
    before = await stateBefore(deps, head, prevIds, g.stateOverride, sourceOf());
  }
  const byStateBefore = checkEventAuth(c.event, before.state, version);
  if (!byStateBefore.allowed) return refuse('rejected', byStateBefore.reason, before.snapshot, before.snapshot);

  // The state after the event.
  let unsigned: JsonObject | undefined;
  const prior = base.stateKey === undefined ? undefined : before.state.get(base.stateKey);
  if (prior !== undefined) unsigned = { replaces_state: prior.event_id, prev_content: prior.content, prev_sender: prior.sender };
  // Off the fast path only its references are needed (the current state is resolved by them).
  let after: Pick<StateAt, 'refs' | 'snapshot'> = before;
  if (base.stateKey !== undefined && !fast) {
    const refs = new Map(before.refs).set(base.stateKey, c.ref);
    after = { refs, snapshot: snapshotOn(before.snapshot, [base.stateKey], refs) };
  }

  // 6. Soft failure against the current state (on the fast path, that is the state before).
  if (!fast && g.joinedThrough !== true) {
    const byCurrent = checkEventAuth(c.event, head.state, version);
    if (!byCurrent.allowed) {
      // Not an extremity itself, but the events it cites are no longer ones (as the reference
      // server counts them: cited by a stored event that is neither rejected nor an outlier).
      const extremities = head.extremitiesAfter(prevIds, null);
      const changed = extremities.length !== head.extremities.length;
      head.extremities = extremities;
      return { ...refuse('soft_failed', byCurrent.reason, before.snapshot, after.snapshot), unsigned, ...(changed ? { extremities } : {}) };
    }
  }

  // Accepted: the extremities and the current state move.
  const extremities = g.joinedThrough === true ? [c.ref] : head.extremitiesAfter(prevIds, g.citedByStored ? null : c.ref);
  const changes: StateChange[] = [];
  let snapshotAfter: SnapshotRef | null;
  if (fast) {
    if (base.stateKey !== undefined) changes.push(head.applyState(base.stateKey, c.event, c.ref).change);
    snapshotAfter = head.snapshot;
  } else {
    snapshotAfter = after.snapshot;
    const resolved = await currentStateOf(deps, head, extremities, c, after, sourceOf());
    if (g.joinedThrough === true) {
      // The current state is the state after the join: its events are in hand (a big room's
      // whole state is not read again), and one snapshot holds both.
      const inHand = new Map<string, { event: RoomEvent; ref: EventRef }>([[c.ref.eventId, { event: c.event, ref: c.ref }]]);
      for (const [key, ref] of before.refs) inHand.set(ref.eventId, { event: before.state.get(key)!, ref });
      changes.push(...(await applyResolved(head, resolved, sourceOf(), inHand)));
      head.snapshot = snapshotAfter;
    } else {
      changes.push(...(await applyResolved(head, resolved, sourceOf())));
    }
  }
  head.extremities = extremities;

  const { redactionTarget, redactedCurrent } = await redactionOf(deps, head, c, before.state);
  const currentState: CurrentStateChange | undefined =
    changes.length > 0 || redactedCurrent ? { changes, snapshot: head.snapshot!, summary: head.summary() } : undefined;
  return {
    ...base,
    status: 'timeline',
    rejectionReason: undefined,
    position: 'stream',
    ...(fast ? { onCurrentState: true } : {}),
    snapshotBefore: before.snapshot,
    snapshotAfter,
    unsigned,
    extremities,
    currentState,
    redactionTarget,
  };
}

/** What gathering found for a backfilled event: no extremity question, and a position reserved. */
export interface GatheredBackfill extends Omit<Gathered, 'citedByStored' | 'fillsBackward'> {
  /** Its negative position, reserved with the rest of its backfill (newer history nearer 0). */
  readonly position: number;
}

/**
 * Decides a backfilled event: history from before the room's backward extremities. Checks 4 and 5
 * only: history is not judged by today's state (as the reference server does not soft-fail
 * backfilled events). Accepted, it takes its reserved negative position; the forward extremities
 * and the current state stay as they are. Its id leaves the backward extremities and its prev
 * events this server lacks join them, rejected or not.
 */
export async function decideBackfilled(deps: DecideDeps, head: RoomHead, c: Candidate, g: GatheredBackfill): Promise<PersistEvent> {
  const version = head.version;
  const base = { ...unitBase(head, c, g.redactedBy, { add: g.missingPrev, remove: [c.ref.eventId] }), extremities: undefined };
  const reject = (reason: string | undefined, before: SnapshotRef | null): PersistEvent => ({
    ...base,
    status: 'rejected',
    rejectionReason: reason,
    position: 'none',
    snapshotBefore: before,
    snapshotAfter: before,
    unsigned: undefined,
    currentState: undefined,
    redactionTarget: undefined,
  });

  // 4. The auth events themselves (rule 2), then the rules against the state they make.
  const authEvents = [...g.authEvents.values()].map(authRoomEventOf);
  const listed = checkAuthEventsList(c.event, authEvents, version, { isRejected: (id) => g.authEvents.get(id)?.status === 'rejected' });
  if (!listed.allowed) return reject(listed.reason, null);
  const byAuthEvents = checkEventAuth(c.event, authStateFromEvents(authEvents, createOf(head, g)), version);
  if (!byAuthEvents.allowed) return reject(byAuthEvents.reason, null);

  // 5. The state before the event: its prev events' states, or the origin's answer for a gap.
  // A message after one prev event reads only the keys its checks read: history in a big room
  // is mostly messages, and its whole state would be read for each.
  await Promise.allSettled([...head.unwritten.values()]);
  const source = new StoredStateSource(deps.db, deps.reader, head, [c]);
  const prevIds = referenceIds(c.pdu.prev_events);
  const wanted = base.stateKey === undefined ? keysToDecide(c.event, version) : [...keysToDecide(c.event, version), base.stateKey];
  const partial = g.stateOverride === undefined ? await partialStateBefore(deps, head, prevIds, wanted) : undefined;
  const before = partial ?? (await stateBefore(deps, head, prevIds, g.stateOverride, source));
  const byStateBefore = checkEventAuth(c.event, before.state, version);
  if (!byStateBefore.allowed) return reject(byStateBefore.reason, before.snapshot);

  let unsigned: JsonObject | undefined;
  let snapshotAfter = before.snapshot;
  if (base.stateKey !== undefined) {
    const prior = before.state.get(base.stateKey);
    if (prior !== undefined) unsigned = { replaces_state: prior.event_id, prev_content: prior.content, prev_sender: prior.sender };
    // A partial state holds only the keys read: the state after is a one-key delta on it.
    snapshotAfter = partial !== undefined ? oneKeyDelta(partial.snapshot!, base.stateKey, c.ref) : snapshotOn(before.snapshot, [base.stateKey], new Map(before.refs).set(base.stateKey, c.ref));
  }

  // 6 does not apply. A redaction in history still takes effect on its target.
  const { redactionTarget, redactedCurrent } = await redactionOf(deps, head, c, before.state);
  return {
    ...base,
    status: 'timeline',
    rejectionReason: undefined,
    position: 'backfill',
    reservedPosition: g.position,
    snapshotBefore: before.snapshot,
    snapshotAfter,
    unsigned,
    // Only a current state event's content changing (redacted): no key changes.
    currentState: redactedCurrent ? { changes: [], snapshot: head.snapshot!, summary: head.summary() } : undefined,
    redactionTarget,
  };
}

/**
 * For a redaction: its target, when the redaction takes effect on it. A current state event
 * redacted changes what later auth checks read: the head's copy is redacted too.
 */
async function redactionOf(
  deps: DecideDeps,
  head: RoomHead,
  c: Candidate,
  before: StateLookup,
): Promise<{ redactionTarget: string | undefined; redactedCurrent: boolean }> {
  if (c.event.type !== 'm.room.redaction' || c.event.redacts === undefined) return { redactionTarget: undefined, redactedCurrent: false };
  const target = await deps.reader.event(c.event.redacts);
  if (target === undefined || target.roomId !== head.roomId || target.status === 'rejected') return { redactionTarget: undefined, redactedCurrent: false };
  const targetEvent = roomEventOf(target);
  if (!redactionApplies(c.event, targetEvent, before, head.version)) return { redactionTarget: undefined, redactedCurrent: false };
  const redactedCurrent =
    target.stateKey !== undefined && head.replaceStateEvent(stateKey(target.type, target.stateKey), redactedRoomEvent(targetEvent, head));
  return { redactionTarget: target.eventId, redactedCurrent };
}

/**
 * Of the state before an event citing `prevIds`, only `keys` (their refs too): when all the prev
 * events have one state after them; undefined otherwise (the whole state is needed).
 */
async function partialStateBefore(deps: DecideDeps, head: RoomHead, prevIds: readonly string[], keys: readonly StateKey[]): Promise<StateAt | undefined> {
  const prevs = await deps.reader.events(prevIds);
  if (prevs.size !== prevIds.length) return undefined;
  const nids = new Set([...prevs.values()].map((e) => e.stateAfterNid));
  if (nids.size !== 1) return undefined;
  const nid = [...nids][0];
  if (nid === undefined) return undefined;
  const info = await getSnapshotInfo(deps.db, nid);
  // A chain at its limit takes a full snapshot next, which needs the whole state.
  if (info === undefined || info.chainLength + 1 > STATE_CHAIN_LIMIT) return undefined;
  const subset = (await readSnapshotsSubset(deps.db, [nid], keys.map(parseStateKey))).get(nid) ?? new Map<StateKey, number>();
  const events = await deps.reader.eventsByNids([...subset.values()]);
  const state = new Map<StateKey, RoomEvent>();
  const refs = new Map<StateKey, EventRef>();
  for (const [key, eventNid] of subset) {
    const e = events.get(eventNid);
    if (e === undefined) return undefined;
    state.set(key, authRoomEventOf(e));
    refs.set(key, refOf(e, head.version));
  }
  return { state, refs, snapshot: storedSnapshot(info) };
}

/** `parent` with `key` set to `ref`: a delta of one entry. */
function oneKeyDelta(parent: SnapshotRef, key: StateKey, ref: EventRef): SnapshotRef {
  return { info: undefined, parent, chainLength: parent.chainLength + 1, keys: [key], entries: [[key, ref]] };
}

/** The state before an event citing `prevIds`: one prev event's state after, or several resolved. */
async function stateBefore(
  deps: DecideDeps,
  head: RoomHead,
  prevIds: readonly string[],
  override: ReadonlyMap<StateKey, StoredEvent> | undefined,
  source: StoredStateSource,
): Promise<StateAt> {
  if (override !== undefined) {
    const state = new Map<StateKey, RoomEvent>();
    const refs = new Map<StateKey, EventRef>();
    for (const [key, e] of override) {
      state.set(key, authRoomEventOf(e));
      refs.set(key, refOf(e, head.version));
    }
    return { state, refs, snapshot: snapshotOn(null, [], refs) };
  }
  const prevs = await deps.reader.events(prevIds);
  const snapshotNids = [...new Set([...prevs.values()].flatMap((e) => (e.stateAfterNid === undefined ? [] : [e.stateAfterNid])))];
  if (snapshotNids.length === 0) return { state: new Map(), refs: new Map(), snapshot: null };
  const sets = await Promise.all(snapshotNids.map((nid) => readSnapshot(deps.db, nid)));
  const first = await getSnapshotInfo(deps.db, snapshotNids[0]!);
  const parent = storedSnapshot(first!);
  if (sets.length === 1) {
    const { state, refs } = await eventsOfState(deps, sets[0]!, source);
    return { state, refs, snapshot: parent };
  }
  // Several states: resolved, and stored as a delta against the first.
  const idSets = await Promise.all(sets.map((set) => idsOfState(deps, set)));
  const resolved = await resolveState(head.roomId, head.version, idSets, source);
  const { state, refs } = await eventsOfIds(resolved, source);
  return { state, refs, snapshot: snapshotOn(parent, changedKeys(idSets[0]!, resolved), refs) };
}

/**
 * The current state once the extremities are `extremities`: the state after the event when it is
 * the only one, else the resolution of the states after each.
 */
async function currentStateOf(
  deps: DecideDeps,
  head: RoomHead,
  extremities: readonly EventRef[],
  c: Candidate,
  after: Pick<StateAt, 'refs'>,
  source: StoredStateSource,
): Promise<Map<StateKey, string>> {
  const idsOf = (s: Pick<StateAt, 'refs'>) => new Map([...s.refs].map(([k, r]) => [k, r.eventId]));
  const others = extremities.filter((r) => r.eventId !== c.ref.eventId);
  const sets: Map<StateKey, string>[] = [];
  if (others.length < extremities.length) sets.push(idsOf(after));
  if (others.length > 0) {
    const stored = await deps.reader.events(others.map((r) => r.eventId));
    const nids = [...new Set([...stored.values()].flatMap((e) => (e.stateAfterNid === undefined ? [] : [e.stateAfterNid])))];
    for (const nid of nids) sets.push(await idsOfState(deps, await readSnapshot(deps.db, nid)));
  }
  if (sets.length === 0) return idsOf({ refs: head.stateRefs });
  if (sets.length === 1) return sets[0]!;
  return resolveState(head.roomId, head.version, sets, source);
}

/** Makes `resolved` the head's current state; returns the changed keys. */
async function applyResolved(
  head: RoomHead,
  resolved: ReadonlyMap<StateKey, string>,
  source: StoredStateSource,
  inHand?: ReadonlyMap<string, { readonly event: RoomEvent; readonly ref: EventRef }>,
): Promise<StateChange[]> {
  const changed: StateKey[] = [];
  for (const [key, id] of resolved) if (head.stateRefs.get(key)?.eventId !== id) changed.push(key);
  for (const key of head.stateRefs.keys()) if (!resolved.has(key)) changed.push(key);
  if (changed.length === 0) return [];
  const wanted = changed.flatMap((k) => (resolved.has(k) && !inHand?.has(resolved.get(k)!) ? [resolved.get(k)!] : []));
  const found = new Map<string, { readonly event: RoomEvent; readonly ref: EventRef }>(await source.stored(wanted));
  for (const key of changed) {
    const id = resolved.get(key);
    const held = id === undefined ? undefined : inHand?.get(id);
    if (held !== undefined) found.set(id!, held);
  }
  const changes: StateChange[] = [];
  const entries: StateKey[] = [];
  for (const key of changed) {
    const id = resolved.get(key);
    if (id === undefined) {
      const removed = head.removeState(key);
      if (removed !== undefined) changes.push(removed);
      entries.push(key);
      continue;
    }
    const e = found.get(id);
    if (e === undefined) continue;
    changes.push(head.setState(key, e.event, e.ref));
    entries.push(key);
  }
  if (entries.length > 0) head.snapshot = snapshotOn(head.snapshot, entries, head.stateRefs);
  return changes;
}

async function idsOfState(deps: DecideDeps, set: ReadonlyMap<StateKey, number>): Promise<Map<StateKey, string>> {
  const events = await deps.reader.eventsByNids([...set.values()]);
  const out = new Map<StateKey, string>();
  for (const [key, nid] of set) {
    const e = events.get(nid);
    if (e !== undefined) out.set(key, e.eventId);
  }
  return out;
}

async function eventsOfState(
  deps: DecideDeps,
  set: ReadonlyMap<StateKey, number>,
  source: StoredStateSource,
): Promise<{ state: Map<StateKey, RoomEvent>; refs: Map<StateKey, EventRef> }> {
  return eventsOfIds(await idsOfState(deps, set), source);
}

async function eventsOfIds(
  ids: ReadonlyMap<StateKey, string>,
  source: StoredStateSource,
): Promise<{ state: Map<StateKey, RoomEvent>; refs: Map<StateKey, EventRef> }> {
  const found = await source.stored([...ids.values()]);
  const state = new Map<StateKey, RoomEvent>();
  const refs = new Map<StateKey, EventRef>();
  for (const [key, id] of ids) {
    const e = found.get(id);
    if (e === undefined) continue;
    state.set(key, e.event);
    refs.set(key, e.ref);
  }
  return { state, refs };
}

/** The keys whose event differs between two states (present in one only included). */
function changedKeys(from: ReadonlyMap<StateKey, string>, to: ReadonlyMap<StateKey, string>): StateKey[] {
  const out: StateKey[] = [];
  for (const [key, id] of to) if (from.get(key) !== id) out.push(key);
  for (const key of from.keys()) if (!to.has(key)) out.push(key);
  return out;
}
