// Receiving events from other servers (a /send transaction, a backfill, a missing event fetched):
// the server-server API's "Checks performed on receipt of a PDU", in order.
//   1–3. Format, signatures and content hash (pdu-checks.ts): dropped, or redacted on a hash mismatch.
//   Then, outside the room's queue, what the decision needs from other servers: missing auth events
//   (fetched and stored as outliers, checked against their own auth events), missing prev events
//   (fetched like /get_missing_events and received first), and when a gap remains, the state
//   before the event as the origin gives it (like /state_ids), its events stored as outliers.
//   4–6. In the room's queue (decide.ts): rejected, soft-failed or accepted.
// Backfilled history (backfill, below) gets 1–5 only, and its missing prev events are not fetched.
// Every fetch is bounded: a batch spends at most FETCH_BUDGET requests to other servers.

import { authStateFromEvents, checkAuthEventsList } from '../../protocol/auth-events.js';
import { encodeBase64 } from '../../protocol/base64.js';
import { checkEventAuth, redactionApplies } from '../../protocol/event-auth.js';
import { referenceIds, stateKey, type RoomEvent, type StateKey } from '../../protocol/events.js';
import { referenceHash } from '../../protocol/hashes.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import { backwardAmong, citedAmong, redactionsTargeting } from '../../storage/rooms/graph.js';
import type { RoomCore } from '../core.js';
import { v12Create, type EventRef, type RoomHead } from '../head.js';
import type { EventStatus, PersistEvent } from '../persist-event.js';
import { roomEventOf, storedEventFromRow, type StoredEvent } from '../stored-event.js';
import { refOf } from '../head-loader.js';
import { decideReceived, type Candidate } from './decide.js';
import { decideBackfilled } from './decide.js';
import { deepestBackwardExtremities, reserveBackfillPositions } from '../../storage/rooms/graph.js';
import type { KeyRing } from './key-ring.js';
import { checkReceivedPdus, type PduCheckResult } from './pdu-checks.js';
import type { RemoteEvents } from './remote-events.js';

/** Backward extremities one backfill request starts from, at most (as the reference server asks). */
const BACKFILL_FROM = 5;
/** Events one backfill asks for and takes, at most. */
const BACKFILL_MAX = 500;

/** Requests to other servers one received batch may cause, at most. */
const FETCH_BUDGET = 20;
/** Events asked for per /get_missing_events request (the spec's default). */
const MISSING_EVENTS_LIMIT = 10;
/** Events received one inside another's receipt (missing or outlier prev events), at most this deep. */
const MAX_NESTING = 50;

export interface ReceiveOutcome {
  /** Undefined when the PDU was dropped before its id was known. */
  readonly eventId: string | undefined;
  readonly status: EventStatus | 'dropped';
  readonly reason?: string;
}

export interface ReceiverPorts {
  readonly keyRing: KeyRing;
  readonly remote: RemoteEvents;
}

interface Budget {
  fetches: number;
  /** Ids that events decided in this call made backward extremities (not yet in the facts read). */
  readonly backward: Set<string>;
}

/** What one batch's reads found about all its events at once. */
interface BatchFacts {
  /** The events stored already. */
  readonly known: ReadonlyMap<string, StoredEvent>;
  /** Those a stored event cites (they arrived late: they cannot be extremities). */
  readonly cited: ReadonlySet<string>;
  /** Stored redactions of them, by the redacted id. */
  readonly redactions: ReadonlyMap<string, readonly StoredEvent[]>;
  /** Those that are backward extremities (a stored event cites them; they were missing). */
  readonly backward: ReadonlySet<string>;
}

export class EventReceiver {
  constructor(
    private readonly core: RoomCore,
    private readonly ports: ReceiverPorts,
  ) {}

  /**
   * Receives PDUs `origin` sent; returns each one's outcome in the order given. PDUs of rooms this
   * server does not have are dropped.
   */
  async receive(origin: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]> {
    const outcomes: ReceiveOutcome[] = new Array(pdus.length);
    const heads = await Promise.all(
      pdus.map((json) => {
        const roomId = isRecord(json) && typeof json['room_id'] === 'string' ? json['room_id'] : undefined;
        return roomId === undefined ? undefined : this.core.findHead(roomId);
      }),
    );
    const known: { index: number; head: RoomHead }[] = [];
    heads.forEach((head, index) => {
      if (head === undefined) outcomes[index] = { eventId: undefined, status: 'dropped', reason: 'unknown room' };
      else known.push({ index, head });
    });
    // Checks 1–3 for the whole batch: one call to the key ring.
    const checked = await checkReceivedPdus(
      known.map(({ index, head }) => ({ json: pdus[index], version: head.version, options: { roomId: head.roomId } })),
      this.ports.keyRing,
    );
    const byRoom = new Map<string, { index: number; c: Candidate }[]>();
    known.forEach(({ index, head }, i) => {
      const result = checked[i]!;
      if (!result.ok) {
        outcomes[index] = { eventId: undefined, status: 'dropped', reason: result.reason };
        return;
      }
      let list = byRoom.get(head.roomId);
      if (list === undefined) byRoom.set(head.roomId, (list = []));
      list.push({ index, c: candidateOf(result, head) });
    });
    const budget: Budget = { fetches: FETCH_BUDGET, backward: new Set() };
    // Writes are not awaited one by one: the batch's events share the writer's transactions.
    const writes: { index: number; stored: Promise<unknown> }[] = [];
    const facts = await this.facts(
      [...byRoom.values()].flatMap((list) => list.map((l) => l.c.ref.eventId)),
      known.flatMap(({ head }) => (head.roomNid === undefined ? [] : [head.roomNid])),
    );
    for (const [roomId, list] of byRoom) {
      // Oldest first, so that events of one batch citing each other arrive in order.
      list.sort((a, b) => a.c.pdu.depth - b.c.pdu.depth);
      for (const { index, c } of list) {
        try {
          const { outcome, stored } = await this.accept(origin, roomId, c, budget, 0, facts);
          outcomes[index] = outcome;
          if (stored !== undefined) writes.push({ index, stored });
        } catch (err) {
          outcomes[index] = { eventId: c.ref.eventId, status: 'dropped', reason: messageOf(err) };
        }
      }
    }
    await settleWrites(writes, outcomes);
    return outcomes;
  }

  /** What deciding these events needs to know of the database, read for all of them at once. */
  private async facts(eventIds: readonly string[], roomNids: readonly number[]): Promise<BatchFacts> {
    const [known, cited, rows, backward] = await Promise.all([
      this.core.reader.events(eventIds),
      citedAmong(this.core.db, eventIds),
      redactionsTargeting(this.core.db, eventIds),
      backwardAmong(this.core.db, roomNids, eventIds),
    ]);
    const redactions = new Map<string, StoredEvent[]>();
    for (const row of rows) {
      const r = storedEventFromRow(row);
      let list = redactions.get(r.redacts!);
      if (list === undefined) redactions.set(r.redacts!, (list = []));
      list.push(r);
    }
    return { known, cited, redactions, backward };
  }

  /**
   * Gathers what deciding `c` needs, then decides it in the room's queue; the write's promise is
   * handed back (undefined when nothing is written).
   */
  private async accept(
    origin: string,
    roomId: string,
    c: Candidate,
    budget: Budget,
    nesting: number,
    batch?: BatchFacts,
  ): Promise<{ outcome: ReceiveOutcome; stored?: Promise<unknown> }> {
    const reader = this.core.reader;
    const eventId = c.ref.eventId;
    const head = await this.core.head(roomId);
    const facts = batch ?? (await this.facts([eventId], head.roomNid === undefined ? [] : [head.roomNid]));
    let known = facts.known.get(eventId);
    // Decided already in this process (twice in one batch, or fetched for another): as decided.
    const deciding = head.unwritten.get(eventId);
    if (deciding !== undefined) {
      await deciding.catch(() => undefined);
      known = await reader.event(eventId);
    }
    // An outlier (known without its state) is received in full now; anything else was decided.
    if (known !== undefined && known.status !== 'outlier') return { outcome: { eventId, status: known.status } };
    if (known !== undefined) c.ref.nid = known.nid;

    // Auth events: missing ones are fetched and stored as outliers; ones decided and not yet
    // stored are waited for.
    const authIds = referenceIds(c.pdu.auth_events);
    let authEvents = await reader.events(authIds);
    const pendingAuth = authIds.flatMap((id) => (authEvents.has(id) ? [] : [head.unwritten.get(id)])).filter((p) => p !== undefined);
    if (pendingAuth.length > 0) {
      await Promise.allSettled(pendingAuth);
      authEvents = await reader.events(authIds);
    }
    const missingAuth = authIds.filter((id) => !authEvents.has(id));
    if (missingAuth.length > 0) {
      await this.fetchOutliers(origin, roomId, missingAuth, budget);
      authEvents = await reader.events(authIds);
    }

    // Prev events: those known only as outliers are received in full first, missing ones are
    // fetched and received first.
    const prevIds = referenceIds(c.pdu.prev_events);
    // Those decided in this process and on their way to the database are not read.
    const readPrevs = () => reader.events(prevIds.filter((id) => !head.unwritten.has(id)));
    let prevs = await readPrevs();
    const outliers = [...prevs.values()].filter((p) => p.status === 'outlier').sort((a, b) => a.pdu.depth - b.pdu.depth);
    if (outliers.length > 0 && nesting < MAX_NESTING) {
      const head = await this.core.head(roomId);
      for (const p of outliers) await this.accept(origin, roomId, candidateOfStored(p, head), budget, nesting + 1);
      prevs = await readPrevs();
    }
    // Decided in this process: present, with their state.
    const present = (id: string) => prevs.has(id) || head.unwritten.has(id);
    if (!prevIds.every(present) && c.event.type !== 'm.room.create' && budget.fetches > 0 && nesting < MAX_NESTING) {
      budget.fetches--;
      const earliest = head.extremities.map((r) => r.eventId);
      const fetched = await this.checkAll(await orNothing(this.ports.remote.missingEvents(origin, roomId, earliest, [eventId], MISSING_EVENTS_LIMIT), []), head);
      fetched.sort((a, b) => a.pdu.depth - b.pdu.depth);
      for (const f of fetched) if (f.ref.eventId !== eventId) await this.accept(origin, roomId, f, budget, nesting + 1);
      prevs = await readPrevs();
    }
    const missingPrev = prevIds.filter((id) => !present(id));

    // A gap that remains (or prev events whose state is unknown): the state as the origin has it.
    let stateOverride: Map<StateKey, StoredEvent> | undefined;
    const withState = prevIds.filter((id) => head.unwritten.has(id) || prevs.get(id)?.stateAfterNid !== undefined);
    if ((missingPrev.length > 0 || withState.length === 0) && c.event.type !== 'm.room.create' && budget.fetches > 0) {
      budget.fetches--;
      const ids = await orNothing(this.ports.remote.stateIdsAt(origin, roomId, eventId), { pduIds: [], authChainIds: [] });
      const wanted = [...new Set([...ids.authChainIds, ...ids.pduIds])];
      const stored = await reader.events(wanted);
      await this.fetchOutliers(origin, roomId, wanted.filter((id) => !stored.has(id)), budget);
      const state = await reader.events(ids.pduIds);
      stateOverride = new Map();
      for (const e of state.values()) {
        if (e.roomId !== roomId || e.stateKey === undefined || e.status === 'rejected') continue;
        stateOverride.set(stateKey(e.type, e.stateKey), e);
      }
    }

    const citedByStored = facts.cited.has(eventId);
    const redactedBy = await this.earlierRedaction(c, facts.redactions.get(eventId) ?? []);
    const written = await this.core.queue.run(roomId, async () => {
      const head = await this.core.head(roomId);
      const unit = await decideReceived({ db: this.core.db, reader }, head, c, {
        authEvents,
        ...(stateOverride !== undefined ? { stateOverride } : {}),
        missingPrev,
        citedByStored,
        fillsBackward: facts.backward.has(eventId) || budget.backward.has(eventId),
        ...(redactedBy !== undefined ? { redactedBy } : {}),
      });
      for (const id of unit.backward?.add ?? []) budget.backward.add(id);
      const stored = { ...unit, received: true, ...(known !== undefined ? { upgradesOutlier: true } : {}) };
      // Wrapped: the queue moves on once decided, not once stored.
      return { unit, stored: this.core.writeDecided(head, [stored]) };
    });
    const reason = written.unit.rejectionReason;
    return { outcome: { eventId, status: written.unit.status, ...(reason !== undefined ? { reason } : {}) }, stored: written.stored };
  }

  /** Fetches events by id from `origin` and stores each as an outlier (or rejected), auth events first. */
  private async fetchOutliers(origin: string, roomId: string, ids: readonly string[], budget: Budget): Promise<void> {
    if (ids.length === 0 || budget.fetches <= 0) return;
    budget.fetches--;
    const head = await this.core.head(roomId);
    const fetched = await this.checkAll(await orNothing(this.ports.remote.events(origin, roomId, ids), []), head);
    const wanted = new Set(ids);
    const byId = new Map(fetched.filter((f) => wanted.has(f.ref.eventId)).map((f) => [f.ref.eventId, f]));
    // Auth events come before the events citing them: depth orders them.
    const ordered = [...byId.values()].sort((a, b) => a.pdu.depth - b.pdu.depth);
    for (const f of ordered) {
      if ((await this.core.reader.event(f.ref.eventId)) !== undefined) continue;
      const authIds = referenceIds(f.pdu.auth_events);
      let auth = await this.core.reader.events(authIds);
      const missing = authIds.filter((id) => !auth.has(id) && !byId.has(id));
      if (missing.length > 0) {
        await this.fetchOutliers(origin, roomId, missing, budget);
        auth = await this.core.reader.events(authIds);
      }
      await this.core.writeDecided(head, [outlier(head, f, [...auth.values()])]);
    }
  }

  private async checkAll(pdus: readonly unknown[], head: RoomHead): Promise<Candidate[]> {
    const results = await checkReceivedPdus(
      pdus.map((json) => ({ json, version: head.version, options: { roomId: head.roomId } })),
      this.ports.keyRing,
    );
    return results.flatMap((r) => (r.ok ? [candidateOf(r, head)] : []));
  }

  /** Of the stored redactions of `c` (ones that arrived before it), the first that takes effect on it. */
  private async earlierRedaction(c: Candidate, redactions: readonly StoredEvent[]): Promise<string | undefined> {
    for (const r of redactions) {
      if (r.status !== 'timeline' || r.roomId !== c.event.room_id) continue;
      const before = await this.core.reader.stateBefore(r);
      const state = new Map([...before].map(([k, e]) => [k, roomEventOf(e)]));
      if (redactionApplies(roomEventOf(r), c.event, state, r.version)) return r.eventId;
    }
    return undefined;
  }

  /**
   * Fills history before the room's backward extremities (the deepest few) from `origin`, like
   * GET /backfill: at most `limit` events, each received as `backfill` receives it. Nothing when
   * the room has no gap or the origin does not answer.
   */
  async backfillFrom(origin: string, roomId: string, limit: number): Promise<ReceiveOutcome[]> {
    const head = await this.core.head(roomId);
    const max = Math.min(Math.floor(limit), BACKFILL_MAX);
    if (!(max > 0)) return [];
    return this.oneBackfillAtATime(roomId, async () => {
      const from = await deepestBackwardExtremities(this.core.db, head.roomNid!, BACKFILL_FROM);
      if (from.length === 0) return [];
      const pdus = await orNothing(this.ports.remote.backfill(origin, roomId, from, max), []);
      return this.backfillNow(origin, roomId, pdus.slice(0, max));
    });
  }

  /** Each room's backfill under way, the last queued. */
  private readonly backfills = new Map<string, Promise<unknown>>();

  /**
   * Backfills of one room run one after another: each reserves its positions below the last's
   * and decides its events in one run, so positions follow history, and the second of two for
   * one gap finds the events stored.
   */
  private async oneBackfillAtATime<T>(roomId: string, run: () => Promise<T>): Promise<T> {
    const next = (this.backfills.get(roomId) ?? Promise.resolve()).catch(() => undefined).then(run);
    this.backfills.set(roomId, next);
    try {
      return await next;
    } finally {
      if (this.backfills.get(roomId) === next) this.backfills.delete(roomId);
    }
  }

  /**
   * Receives history `origin` returned for a backfill of `roomId`; each one's outcome in the order
   * given. Checks 1–3, then, oldest first, what deciding needs (missing auth events fetched as
   * outliers; for prev events this server lacks, the state before the event as the origin gives
   * it; missing prev events are not fetched: they become backward extremities), then checks 4–5
   * in the room's queue (decide.ts decideBackfilled): no soft failure, no change to the forward
   * extremities or the current state, negative positions numbered newest first. Events stored
   * already (a second backfill of the same history) keep what was decided.
   */
  backfill(origin: string, roomId: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]> {
    return this.oneBackfillAtATime(roomId, () => this.backfillNow(origin, roomId, pdus));
  }

  private async backfillNow(origin: string, roomId: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]> {
    const head = await this.core.findHead(roomId);
    if (head === undefined) return pdus.map(() => ({ eventId: undefined, status: 'dropped', reason: 'unknown room' }));
    const outcomes: ReceiveOutcome[] = new Array(pdus.length);
    // 1–3, and the room the request was for.
    const checked = await checkReceivedPdus(
      pdus.map((json) => ({ json, version: head.version, options: { roomId } })),
      this.ports.keyRing,
    );
    const list: { index: number; c: Candidate }[] = [];
    checked.forEach((result, index) => {
      if (result.ok) list.push({ index, c: candidateOf(result, head) });
      else outcomes[index] = { eventId: undefined, status: 'dropped', reason: result.reason };
    });
    // Oldest first, so that each event's prev events are decided before it.
    list.sort((a, b) => a.c.pdu.depth - b.c.pdu.depth || a.c.pdu.origin_server_ts - b.c.pdu.origin_server_ts || compareIds(a.c.ref.eventId, b.c.ref.eventId));
    const facts = await this.facts(
      list.map((l) => l.c.ref.eventId),
      head.roomNid === undefined ? [] : [head.roomNid],
    );
    // Positions for the events not stored yet (each id once), the newest nearest 0.
    const fresh = [...new Set(list.filter((l) => (facts.known.get(l.c.ref.eventId)?.status ?? 'outlier') === 'outlier').map((l) => l.c.ref.eventId))];
    const reserved = await reserveBackfillPositions(this.core.db, fresh.length);
    const positions = new Map(fresh.map((id, i) => [id, reserved[fresh.length - 1 - i]!]));
    const budget: Budget = { fetches: FETCH_BUDGET, backward: new Set() };
    const writes: { index: number; stored: Promise<unknown> }[] = [];
    for (const { index, c } of list) {
      try {
        const position = positions.get(c.ref.eventId);
        // Stored already, or twice in this answer: as decided.
        positions.delete(c.ref.eventId);
        const { outcome, stored } = await this.acceptBackfilled(origin, roomId, c, position, budget, facts);
        outcomes[index] = outcome;
        if (stored !== undefined) writes.push({ index, stored });
      } catch (err) {
        outcomes[index] = { eventId: c.ref.eventId, status: 'dropped', reason: messageOf(err) };
      }
    }
    await settleWrites(writes, outcomes);
    return outcomes;
  }

  /** Gathers what deciding a backfilled event needs, then decides it in the room's queue. */
  private async acceptBackfilled(
    origin: string,
    roomId: string,
    c: Candidate,
    position: number | undefined,
    budget: Budget,
    facts: BatchFacts,
  ): Promise<{ outcome: ReceiveOutcome; stored?: Promise<unknown> }> {
    const reader = this.core.reader;
    const eventId = c.ref.eventId;
    const head = await this.core.head(roomId);
    await head.unwritten.get(eventId)?.catch(() => undefined);
    // Read afresh: an event of this answer may have been stored meanwhile (as an outlier, fetched for another).
    const known = await reader.event(eventId);
    if (known !== undefined && known.status !== 'outlier') return { outcome: { eventId, status: known.status } };
    // Listed twice, and not stored the first time: not decided again.
    if (position === undefined) return { outcome: { eventId, status: 'dropped', reason: 'listed twice' } };

    // Auth events: missing ones are fetched and stored as outliers.
    const authIds = referenceIds(c.pdu.auth_events);
    await Promise.allSettled(authIds.flatMap((id) => head.unwritten.get(id) ?? []));
    let authEvents = await reader.events(authIds);
    const missingAuth = authIds.filter((id) => !authEvents.has(id));
    if (missingAuth.length > 0) {
      await this.fetchOutliers(origin, roomId, missingAuth, budget);
      authEvents = await reader.events(authIds);
    }

    // Prev events: those decided just before (earlier in this answer) are waited for, their state
    // is read. One not stored, or stored without its state (an outlier), is a gap: not fetched,
    // it becomes a backward extremity, and the state before the event is the origin's.
    const prevIds = referenceIds(c.pdu.prev_events);
    await Promise.allSettled(prevIds.flatMap((id) => head.unwritten.get(id) ?? []));
    const prevs = await reader.events(prevIds);
    const missingPrev = prevIds.filter((id) => (prevs.get(id)?.status ?? 'outlier') === 'outlier');
    const withState = prevIds.filter((id) => prevs.get(id)?.stateAfterNid !== undefined);
    let stateOverride: Map<StateKey, StoredEvent> | undefined;
    if ((missingPrev.length > 0 || withState.length === 0) && c.event.type !== 'm.room.create') {
      stateOverride = await this.stateFromOrigin(origin, roomId, eventId, budget);
      // Not rejected: with no state to judge it by, it is left for a later backfill.
      if (stateOverride === undefined) return { outcome: { eventId, status: 'dropped', reason: 'the state before it is unknown' } };
    }

    const redactedBy = await this.earlierRedaction(c, facts.redactions.get(eventId) ?? []);
    const written = await this.core.queue.run(roomId, async () => {
      const head = await this.core.head(roomId);
      // Decided while this was gathered (received live meanwhile): as decided, not twice.
      const raced = head.unwritten.get(eventId);
      if (raced !== undefined) return { raced };
      const now = await reader.event(eventId);
      if (now !== undefined && now.status !== 'outlier') return { raced: Promise.resolve(eventId) };
      if (now !== undefined) c.ref.nid = now.nid;
      const unit = await decideBackfilled({ db: this.core.db, reader }, head, c, {
        authEvents,
        ...(stateOverride !== undefined ? { stateOverride } : {}),
        missingPrev,
        ...(redactedBy !== undefined ? { redactedBy } : {}),
        position,
      });
      const stored = now === undefined ? unit : { ...unit, upgradesOutlier: true };
      return { unit, stored: this.core.writeDecided(head, [stored]) };
    });
    if (written.raced !== undefined) {
      await written.raced.catch(() => undefined);
      const decided = await reader.event(eventId);
      return { outcome: decided === undefined ? { eventId, status: 'dropped', reason: 'decided elsewhere, not stored' } : { eventId, status: decided.status } };
    }
    const reason = written.unit.rejectionReason;
    return { outcome: { eventId, status: written.unit.status, ...(reason !== undefined ? { reason } : {}) }, stored: written.stored };
  }

  /**
   * The state before `eventId` as `origin` gives it (like /state_ids), its events fetched and
   * stored as outliers; undefined when the origin gives none (or the budget is spent).
   */
  private async stateFromOrigin(origin: string, roomId: string, eventId: string, budget: Budget): Promise<Map<StateKey, StoredEvent> | undefined> {
    if (budget.fetches <= 0) return undefined;
    budget.fetches--;
    const ids = await orNothing(this.ports.remote.stateIdsAt(origin, roomId, eventId), { pduIds: [], authChainIds: [] });
    if (ids.pduIds.length === 0) return undefined;
    const reader = this.core.reader;
    const wanted = [...new Set([...ids.authChainIds, ...ids.pduIds])];
    const stored = await reader.events(wanted);
    await this.fetchOutliers(origin, roomId, wanted.filter((id) => !stored.has(id)), budget);
    const state = new Map<StateKey, StoredEvent>();
    for (const e of (await reader.events(ids.pduIds)).values()) {
      if (e.roomId !== roomId || e.stateKey === undefined || e.status === 'rejected') continue;
      state.set(stateKey(e.type, e.stateKey), e);
    }
    return state;
  }
}

/** An auth event as an outlier's check reads it. */
export interface AuthEventSeen {
  readonly event: RoomEvent;
  readonly status: EventStatus;
}

/** An event known without its state: checked against its own auth events only (check 4). */
export function outlier(
  head: RoomHead,
  c: Candidate,
  authEvents: readonly (StoredEvent | AuthEventSeen)[],
  /** v12: the room's create event, when the head does not hold it yet (a join's answer). */
  create: RoomEvent | undefined = v12Create(head),
): PersistEvent {
  const version: RoomVersion = head.version;
  const auth = authEvents.map((e) => ('event' in e ? e.event : roomEventOf(e)));
  const statuses = new Map(auth.map((e, i) => [e.event_id, authEvents[i]!.status]));
  let reason: string | undefined;
  const listed = checkAuthEventsList(c.event, auth, version, { isRejected: (id) => statuses.get(id) === 'rejected' });
  if (!listed.allowed) reason = listed.reason;
  else {
    const allowed = checkEventAuth(c.event, authStateFromEvents(auth, create), version);
    if (!allowed.allowed) reason = allowed.reason;
  }
  return {
    head,
    ref: c.ref,
    pdu: c.pdu,
    json: c.json,
    event: c.event,
    status: reason === undefined ? 'outlier' : 'rejected',
    rejectionReason: reason,
    position: 'none',
    stateKey: c.event.state_key === undefined ? undefined : stateKey(c.event.type, c.event.state_key),
    snapshotBefore: null,
    snapshotAfter: null,
    unsigned: undefined,
    txn: undefined,
    extremities: undefined,
    currentState: undefined,
    redactionTarget: undefined,
    backward: undefined,
    streamOrdering: undefined,
  };
}

/** What another server answered, or `fallback` when it failed to: a gap it cannot fill stays a gap. */
export async function orNothing<T>(answer: Promise<T>, fallback: T): Promise<T> {
  try {
    return await answer;
  } catch {
    return fallback;
  }
}

/** A stored event (an outlier) as a candidate to receive in full. */
function candidateOfStored(e: StoredEvent, head: RoomHead): Candidate {
  return { pdu: e.pdu, json: JSON.stringify(e.pdu), event: roomEventOf(e), ref: refOf(e, head.version) };
}

/** A PDU past checks 1–3 as the decision reads it. */
export function candidateOf(result: Extract<PduCheckResult, { ok: true }>, head: RoomHead): Candidate {
  const ref: EventRef = {
    eventId: result.eventId,
    depth: result.pdu.depth,
    nid: undefined,
    ...(head.version.eventIdFormat === 'v1' ? { referenceHash: encodeBase64(referenceHash(result.pdu, head.version)) } : {}),
  };
  return { pdu: result.pdu, json: JSON.stringify(result.pdu), event: result.event, ref };
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Waits for a batch's writes; an event whose write failed is dropped after all. */
async function settleWrites(writes: readonly { index: number; stored: Promise<unknown> }[], outcomes: ReceiveOutcome[]): Promise<void> {
  for (const { index, stored } of writes) {
    try {
      await stored;
    } catch (err) {
      outcomes[index] = { eventId: outcomes[index]!.eventId, status: 'dropped', reason: messageOf(err) };
    }
  }
}
