// Taking a room from a resident server's answer to this server's send_join (server-server API,
// "Joining Rooms"). Steps:
//   1. Every event of the answer's `state` and `auth_chain` passes checks 1–3 (format,
//      signatures, content hash) or is left out; the state must hold the room's create event, of
//      the version make_join named.
//   2. The room's row is made when this server did not have the room.
//   3. The events this server lacks are stored as outliers, auth events before the events citing
//      them, each checked against its own auth events (check 4); those failing it are rejected.
//   4. The join is decided in the room's queue with the answer's state (less rejected events) as
//      the state before it: checks 4–5, no soft failure. It becomes the room's only forward
//      extremity and the state after it the current state; what this server knew of the room
//      before (it may have been in it once) is superseded. Its prev events, which this server
//      lacks, become backward extremities: history is backfilled from them.
// Nothing here waits on another server: the answer was fetched before.

import { referenceIds, stateKey, type Pdu, type StateKey } from '../../protocol/events.js';
import { HearthError } from '../../protocol/errors.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import type { RoomCore } from '../core.js';
import { RoomHead } from '../head.js';
import type { PersistEvent } from '../persist-event.js';
import type { StoredEvent } from '../stored-event.js';
import { decideReceived, type Candidate } from './decide.js';
import type { KeyRing } from './key-ring.js';
import { checkReceivedPdus } from './pdu-checks.js';
import { candidateOf, outlier, type AuthEventSeen, type ReceiveOutcome } from './receive.js';

/** Events checked at once, and outliers written in one transaction. */
const CHECK_SLICE = 1000;
const WRITE_SLICE = 2000;

export interface JoinAnswer {
  readonly roomId: string;
  readonly version: RoomVersion;
  /** The join as this server signed it (or as the resident returned it, countersigned). */
  readonly join: Pdu;
  /** Taken: emptied once read, so that the parsed answer goes with the checks' copies. */
  readonly state: unknown[];
  readonly authChain: unknown[];
}

/** Where a long join's steps are told (the server's log). */
export type JoinProgress = (step: string, fields: Record<string, unknown>) => void;

/** Receives this server's join and the room's state from `resident`'s send_join answer. */
export async function receiveJoinAnswer(
  core: RoomCore,
  keyRing: KeyRing,
  resident: string,
  answer: JoinAnswer,
  progress: JoinProgress = () => undefined,
): Promise<ReceiveOutcome> {
  const { roomId, version } = answer;
  const started = Date.now();
  const ms = () => Date.now() - started;
  progress('checking the room\'s state', { roomId, resident, state: answer.state.length, authChain: answer.authChain.length });
  const bad = (why: string) => new HearthError(502, 'M_UNKNOWN', `${resident} answered the join with ${why}`);

  // 1.
  const seed = new RoomHead(roomId, version);
  const all = [answer.join, ...answer.state, ...answer.authChain];
  const stateCount = answer.state.length;
  answer.state.length = answer.authChain.length = 0;
  const byId = new Map<string, Candidate>();
  const stateIds = new Set<string>();
  let join: Candidate | undefined;
  // In slices: what checking makes on the way (redacted copies, canonical texts) is garbage
  // after each, so a big room's join does not hold it all at once.
  for (let start = 0; start < all.length; start += CHECK_SLICE) {
    const checked = await checkReceivedPdus(
      all.slice(start, start + CHECK_SLICE).map((json) => ({ json, version, options: { roomId } })),
      keyRing,
    );
    checked.forEach((r, offset) => {
      if (!r.ok) return;
      const i = start + offset;
      const c = candidateOf(r, seed);
      if (i === 0) join = c;
      else byId.set(c.ref.eventId, c);
      if (i > 0 && i <= stateCount) stateIds.add(c.ref.eventId);
    });
  }
  if (join === undefined) throw bad('a join that does not pass the checks');
  const joinCandidate: Candidate = join;
  const create = [...stateIds].map((id) => byId.get(id)!).find((c) => c.event.type === 'm.room.create' && c.event.state_key === '');
  if (create === undefined) throw bad('a state without the room\'s create event');
  const createdVersion = create.event.content['room_version'] ?? '1';
  if (createdVersion !== version.id) throw bad(`a create event of version ${String(createdVersion)}, not ${version.id}`);

  // 2. (RemoteJoiner runs one remote join of a room at a time: the row is made once.)
  const held = await core.findHead(roomId);
  if (held !== undefined && held.version.id !== version.id) throw bad(`version ${version.id}, but the room here is of version ${held.version.id}`);
  const room = held ?? (await core.newRemoteHead(roomId, version, create.event.sender, create.pdu.origin_server_ts));

  // v12: no event cites the create event, but each is checked with it (the room id names it).
  const v12CreateOf = version.createEventRoomId ? create.event : undefined;
  // 3. Auth events first: an order in which every event comes after those of its auth events
  // the answer holds.
  const stored = await core.reader.events([...byId.keys()]);
  const seen = new Map<string, AuthEventSeen | StoredEvent>(stored);
  progress('storing the room\'s state', { roomId, checked: byId.size, dropped: all.length - 1 - byId.size, storing: byId.size - stored.size, ms: ms() });
  // Written in slices too, each once decided: one transaction per slice.
  let outliers: PersistEvent[] = [];
  for (const c of authOrder(byId)) {
    if (stored.has(c.ref.eventId)) continue;
    const auth = referenceIds(c.pdu.auth_events).flatMap((id) => seen.get(id) ?? []);
    const unit = outlier(room, c, auth, v12CreateOf);
    outliers.push(unit);
    seen.set(c.ref.eventId, { event: c.event, status: unit.status });
    if (outliers.length >= WRITE_SLICE) {
      await core.writeDecided(room, outliers);
      outliers = [];
    }
  }
  if (outliers.length > 0) await core.writeDecided(room, outliers);
  outliers = [];
  // What the checks made is stored now: let it go before the join's state is read back.
  byId.clear();
  seen.clear();
  all.length = 0;
  progress('deciding the join', { roomId, ms: ms() });

  // 4.
  const events = await core.reader.events([...stateIds]);
  const state = new Map<StateKey, StoredEvent>();
  for (const e of events.values()) {
    if (e.roomId !== roomId || e.stateKey === undefined || e.status === 'rejected') continue;
    state.set(stateKey(e.type, e.stateKey), e);
  }
  const authIds = referenceIds(joinCandidate.pdu.auth_events);
  const authEvents = await core.reader.events(authIds);
  const prevIds = referenceIds(joinCandidate.pdu.prev_events);
  const prevs = await core.reader.events(prevIds);
  const missingPrev = prevIds.filter((id) => (prevs.get(id)?.status ?? 'outlier') === 'outlier');
  const known = await core.reader.event(joinCandidate.ref.eventId);
  if (known !== undefined && known.status !== 'outlier') return { eventId: known.eventId, status: known.status };
  const decided = await core.queue.run(roomId, async () => {
    const current = room.live ? room : await core.head(roomId);
    if (known !== undefined) joinCandidate.ref.nid = known.nid;
    const unit = await decideReceived({ db: core.db, reader: core.reader }, current, joinCandidate, {
      authEvents,
      stateOverride: state,
      missingPrev,
      citedByStored: false,
      fillsBackward: false,
      joinedThrough: true,
    });
    const write = known === undefined ? unit : { ...unit, upgradesOutlier: true };
    return { unit, stored: core.writeOnNewHead(current, write) };
  });
  await decided.stored;
  progress('joined', { roomId, status: decided.unit.status, ms: ms() });
  const reason = decided.unit.rejectionReason;
  return { eventId: joinCandidate.ref.eventId, status: decided.unit.status, ...(reason !== undefined ? { reason } : {}) };
}

/** The candidates, each after those of its auth events among them (Kahn's order; cycles last). */
function authOrder(byId: ReadonlyMap<string, Candidate>): Candidate[] {
  const waiting = new Map<string, number>();
  const citing = new Map<string, string[]>();
  for (const [id, c] of byId) {
    const inSet = [...new Set(referenceIds(c.pdu.auth_events))].filter((a) => byId.has(a) && a !== id);
    waiting.set(id, inSet.length);
    for (const a of inSet) {
      let list = citing.get(a);
      if (list === undefined) citing.set(a, (list = []));
      list.push(id);
    }
  }
  const ready = [...waiting].filter(([, n]) => n === 0).map(([id]) => id);
  const out: Candidate[] = [];
  while (ready.length > 0) {
    const id = ready.pop()!;
    out.push(byId.get(id)!);
    for (const next of citing.get(id) ?? []) {
      const n = waiting.get(next)! - 1;
      waiting.set(next, n);
      if (n === 0) ready.push(next);
    }
  }
  // Events in an auth cycle cannot be valid; they are checked last and rejected.
  if (out.length < byId.size) {
    const placed = new Set(out.map((c) => c.ref.eventId));
    for (const [id, c] of byId) if (!placed.has(id)) out.push(c);
  }
  return out;
}
