// The one writer of the room graph. Decided events (PersistEvent: local sends and received PDUs
// alike) are queued here in the order their rooms' queues decided them, and committed in batches:
// whatever was queued while the previous transaction ran goes into the next one, so concurrent
// sends (into one room or many) share a transaction while a lone sender waits for no one. The
// writer decides nothing. Everything of an event is in its batch's transaction: the event row with
// its status and stream position, its auth and prev references, its state snapshots, the current
// state's change (deltas, memberships, joined servers, room summary), forward and backward
// extremities, the room's latest position and the transaction id.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseStateKey, referenceIds, type StateKey } from '../protocol/events.js';
import type { Schema } from '../storage/schema.js';
import { setRedactedBy, upgradeOutlierRow, type NewEventRow } from '../storage/rooms/events.js';
import { setForwardExtremities } from '../storage/rooms/extremities.js';
import { addBackwardExtremities, allocateBackfillPositions, removeBackwardExtremities, type JoinedServerChange, type NewStateDelta } from '../storage/rooms/graph.js';
import type { HotRoomQueries, RoomAdvance } from '../storage/rooms/hot-queries.js';
import type { NewMembership } from '../storage/rooms/memberships.js';
import type { SnapshotInfo, StateKeyNids } from '../storage/rooms/state-snapshots.js';
import type { StateWrites } from '../storage/rooms/state-writes.js';
import type { EventRef, RoomHead, SnapshotRef } from './head.js';
import type { PersistEvent } from './persist-event.js';
import { relationOf, type Relation } from '../protocol/relations.js';
import { deleteRelationOf, markRelated, relatedAlready, writeRelations, type NewRelation } from '../storage/rooms/relations.js';
import { isIndexable, queueBackfilled } from '../storage/search/event-search.js';

export interface WriteJob {
  readonly events: readonly PersistEvent[];
  /** Runs first in the transaction, e.g. inserting a new room's row. */
  readonly before?: (trx: Kysely<Schema>) => Promise<void>;
}

function staleHead(): HearthError {
  return new HearthError(503, 'M_UNKNOWN', 'The room changed while the event was being sent; try again');
}

interface Queued {
  readonly job: WriteJob;
  resolve(): void;
  reject(err: unknown): void;
}

export interface WriterHooks {
  /** After a batch commits, with its events in order. */
  committed(events: readonly PersistEvent[]): void;
  /** After a batch failed: these heads are dead and must be reloaded. */
  failed(heads: ReadonlySet<RoomHead>): void;
}

/** Events per transaction at most; more wait for the next one. */
const MAX_BATCH_EVENTS = 500;

export class EventWriter {
  private queue: Queued[] = [];
  private running = false;
  private scheduled = false;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly stateKeys: StateKeyNids,
    private readonly queries: HotRoomQueries,
    private readonly hooks: WriterHooks,
  ) {}

  /** Jobs waiting for a transaction (for metrics). */
  get queuedJobs(): number {
    return this.queue.length;
  }

  /** Resolves once the job's events are committed; rejects if their transaction failed. */
  write(job: WriteJob): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
  }

  // The first write waits one turn of the event loop, so that requests read in the same turn
  // share its transaction.
  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) await this.commitBatch(this.takeBatch());
    } finally {
      this.running = false;
    }
  }

  private takeBatch(): Queued[] {
    let n = 0;
    let events = 0;
    while (n < this.queue.length && (n === 0 || events + this.queue[n]!.job.events.length <= MAX_BATCH_EVENTS)) {
      events += this.queue[n]!.job.events.length;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async commitBatch(batch: Queued[]): Promise<void> {
    const live: Queued[] = [];
    for (const q of batch) {
      if (q.job.events.every((e) => e.head.live)) live.push(q);
      // Built on a head whose earlier write failed: its prev_events were never stored.
      else q.reject(staleHead());
    }
    if (live.length === 0) return;
    try {
      await this.commit(live);
    } catch (err) {
      this.stateKeys.clear();
      if (live.length === 1) this.fail(live, err);
      else await this.commitOneByOne(live);
      return;
    }
    this.settle(live);
  }

  private async commitOneByOne(live: readonly Queued[]): Promise<void> {
    // One job broke a shared transaction: write them one by one, so only it (and what was built
    // on it) fails.
    const failed = new Set<RoomHead>();
    for (const q of live) {
      if (q.job.events.some((e) => failed.has(e.head))) {
        q.reject(staleHead());
        continue;
      }
      try {
        await this.commit([q]);
      } catch (err) {
        this.stateKeys.clear();
        for (const e of q.job.events) failed.add(e.head);
        q.reject(err);
        continue;
      }
      this.settle([q]);
    }
    if (failed.size > 0) this.markDead(failed);
  }

  /**
   * Tells the hooks what committed, then resolves the jobs. Outside the batch's error handling: a
   * hook that threw must not make a committed batch be written again.
   */
  private settle(jobs: readonly Queued[]): void {
    try {
      this.hooks.committed(jobs.flatMap((q) => q.job.events));
    } catch (err) {
      // The rows are stored whatever the hook did; the error surfaces as the bug it is.
      queueMicrotask(() => {
        throw err;
      });
    } finally {
      for (const q of jobs) q.resolve();
    }
  }

  /** Writes the jobs in one transaction (settle tells and resolves them once it committed). */
  private async commit(jobs: readonly Queued[]): Promise<void> {
    const events = jobs.flatMap((q) => q.job.events);
    const snapshots = new Map<SnapshotRef, SnapshotInfo>();
    const persist = (trx: Kysely<Schema>) => this.persist(trx, jobs, events, snapshots);
    // A batch that writes nothing but the append (messages into linear rooms) needs no transaction
    // around it: on PostgreSQL the append is one statement (two round trips fewer), on SQLite its
    // own transaction on the connection (no promise chain around BEGIN and COMMIT).
    const extremityCounts =
      onlyAppends(jobs, events) ? await persist(this.db) : await this.db.transaction().execute(persist);
    // Only now: a rolled-back transaction's snapshot rows do not exist.
    for (const [s, info] of snapshots) s.info = info;
    for (const [head, count] of extremityCounts) head.storedExtremityCount = count;
  }

  private fail(jobs: readonly Queued[], err: unknown): void {
    this.markDead(new Set(jobs.flatMap((q) => q.job.events.map((e) => e.head))));
    for (const q of jobs) q.reject(err);
  }

  private markDead(heads: Set<RoomHead>): void {
    for (const h of heads) h.live = false;
    this.hooks.failed(heads);
  }

  private async persist(
    trx: Kysely<Schema>,
    batch: readonly Queued[],
    events: readonly PersistEvent[],
    snapshots: Map<SnapshotRef, SnapshotInfo>,
  ): Promise<Map<RoomHead, number>> {
    for (const q of batch) await q.job.before?.(trx);
    await this.allocateBackfillPositions(trx, events);
    const writes = this.queries.stateWrites(trx);

    // Snapshot rows first, parents before children: event rows point at them. Their entries
    // follow the event rows.
    const info = (s: SnapshotRef | null): SnapshotInfo | null => (s === null ? null : (snapshots.get(s) ?? s.info ?? null));
    const writeSnapshot = async (s: SnapshotRef | null, roomNid: number): Promise<void> => {
      if (s === null || info(s) !== null) return;
      await writeSnapshot(s.parent, roomNid);
      snapshots.set(s, await writes.snapshotRow(roomNid, info(s.parent)));
    };
    for (const e of events) {
      await writeSnapshot(e.snapshotBefore, e.head.roomNid!);
      await writeSnapshot(e.snapshotAfter, e.head.roomNid!);
      if (e.currentState !== undefined) await writeSnapshot(e.currentState.snapshot, e.head.roomNid!);
    }

    // Per room: the latest current state, forward extremities and position.
    const stateOfRoom = new Map<RoomHead, PersistEvent>();
    const extremitiesOfRoom = new Map<RoomHead, PersistEvent>();
    const latestOfRoom = new Map<RoomHead, number>();
    const onStream = events.filter((e) => e.position === 'stream');
    onStream.forEach((e, rank) => latestOfRoom.set(e.head, rank));
    for (const e of events) {
      if (e.currentState !== undefined) stateOfRoom.set(e.head, e);
      if (e.extremities !== undefined) extremitiesOfRoom.set(e.head, e);
    }

    // The append: positions, event rows with their references, each room's latest position and
    // the extremity of a room that stays linear. Other extremities follow once nids are known.
    const inserted = events.filter((e) => e.upgradesOutlier !== true);
    const insertedIds = new Set(inserted.map((e) => e.ref.eventId));
    const rankOf = new Map(onStream.map((e, rank) => [e, rank]));
    const rooms = new Map<RoomHead, RoomAdvance>();
    for (const [head, rank] of latestOfRoom) rooms.set(head, { roomNid: head.roomNid!, latestRank: rank, extremity: undefined });
    const otherExtremities: [RoomHead, readonly EventRef[]][] = [];
    for (const [head, e] of extremitiesOfRoom) {
      const [only, ...more] = e.extremities!;
      if (head.storedExtremityCount !== 1 || only === undefined || more.length > 0) {
        otherExtremities.push([head, e.extremities!]);
        continue;
      }
      const extremity = insertedIds.has(only.eventId) ? { eventId: only.eventId } : { nid: only.nid! };
      rooms.set(head, { roomNid: head.roomNid!, latestRank: rooms.get(head)?.latestRank, extremity });
    }
    const { nids, firstPosition } = await this.queries.appendEvents(trx, {
      positions: onStream.length,
      events: inserted.map((e) => ({
        row: eventRow(e, info),
        streamRank: rankOf.get(e),
        // Only state events' auth references are rows: an auth chain passes through state events
        // alone, and a chain walked from another event reads its first step from its JSON
        // (storage/rooms/graph.ts authChainIds). A message writes one B-tree page fewer.
        authEventIds: e.pdu.state_key === undefined ? [] : referenceIds(e.pdu.auth_events),
        prevEventIds: referenceIds(e.pdu.prev_events),
      })),
      rooms: [...rooms.values()],
    });
    inserted.forEach((e, i) => (e.ref.nid = nids[i]));
    onStream.forEach((e, rank) => (e.streamOrdering = firstPosition + rank));
    for (const e of events) if (e.upgradesOutlier === true) await upgradeOutlierRow(trx, e.ref.nid!, eventRow(e, info));
    await this.writeRelations(trx, events);
    // The search indexer follows the events stream: history fetched later waits in its queue.
    await queueBackfilled(trx, events.flatMap((e) => (e.position === 'backfill' && e.status === 'timeline' && isIndexable(e.pdu.type) ? [e.ref.nid!] : [])));

    // State keys new to the server are created at once for the whole batch.
    const keys: StateKey[] = [];
    for (const snapshot of snapshots.keys()) for (const [key] of snapshot.entries) keys.push(key);
    for (const e of events) for (const c of e.currentState?.changes ?? []) keys.push(c.key);
    if (keys.length > 0) await this.stateKeys.resolve(trx, keys);
    const keyNid = (key: StateKey) => this.stateKeys.cached(key)!;
    for (const [snapshot, { nid }] of snapshots) {
      await writes.snapshotEntries(nid, snapshot.entries.map(([key, ref]) => [keyNid(key), ref === null ? null : ref.nid!]));
    }
    if (events.some((e) => e.currentState !== undefined && e.currentState.changes.length > 0)) {
      await writeStateChanges(writes, events, keyNid, (e) => info(e.currentState!.snapshot)!.nid);
    }

    for (const e of events) {
      if (e.redactionTarget !== undefined) {
        await setRedactedBy(trx, e.redactionTarget, e.ref.eventId);
        await deleteRelationOf(trx, e.redactionTarget);
      }
      if (e.backward !== undefined) {
        await removeBackwardExtremities(trx, e.head.roomNid!, e.backward.remove);
        await addBackwardExtremities(trx, e.head.roomNid!, e.backward.add);
      }
    }

    for (const [head, e] of stateOfRoom) {
      await writes.updateRoomSummary(head.roomNid!, { state_snapshot_nid: info(e.currentState!.snapshot)!.nid, ...e.currentState!.summary });
    }
    for (const [head, refs] of otherExtremities) {
      await setForwardExtremities(trx, head.roomNid!, refs.map((r) => r.nid!), head.storedExtremityCount);
    }
    const counts = new Map<RoomHead, number>();
    for (const [head, e] of extremitiesOfRoom) counts.set(head, e.extremities!.length);
    return counts;
  }

  /**
   * The batch's relations, and the marks on the events they relate to: those stored already, those
   * in the batch, and events of the batch that relations stored earlier name (history fetched
   * after the reactions to it).
   */
  private async writeRelations(trx: Kysely<Schema>, events: readonly PersistEvent[]): Promise<void> {
    const relations: NewRelation[] = [];
    for (const e of events) {
      const rel = relatingTo(e);
      if (rel === undefined) continue;
      relations.push({
        eventNid: e.ref.nid!,
        eventId: e.ref.eventId,
        roomNid: e.head.roomNid!,
        relatesTo: rel.eventId,
        relType: rel.relType,
        type: e.pdu.type,
        sender: e.pdu.sender,
        key: rel.key,
        position: e.streamOrdering!,
        originServerTs: e.pdu.origin_server_ts,
      });
    }
    await writeRelations(trx, relations);
    const targets = new Set(relations.map((r) => r.relatesTo));
    const unsure = events.filter((e) => mayBeRelatedAlready(e) && !targets.has(e.ref.eventId)).map((e) => e.ref.eventId);
    for (const id of await relatedAlready(trx, unsure)) targets.add(id);
    await markRelated(trx, [...targets]);
    for (const e of events) if (targets.has(e.ref.eventId)) e.hasRelations = true;
  }

  /** Negative positions for backfilled history (reserved by its backfill, or taken here); the events stream's are taken by the append. */
  private async allocateBackfillPositions(trx: Kysely<Schema>, events: readonly PersistEvent[]): Promise<void> {
    for (const e of events) if (e.position === 'backfill' && e.reservedPosition !== undefined) e.streamOrdering = e.reservedPosition;
    const backfilled = events.filter((e) => e.position === 'backfill' && e.reservedPosition === undefined);
    if (backfilled.length > 0) {
      const positions = await allocateBackfillPositions(trx, backfilled.length);
      backfilled.forEach((e, i) => (e.streamOrdering = positions[i]));
    }
    for (const e of events) if (e.position === 'none') e.streamOrdering = undefined;
  }
}

/**
 * The current state's deltas of a batch, and what follows from member changes: memberships (the
 * last change of each member) and joined servers.
 */
async function writeStateChanges(
  writes: StateWrites,
  events: readonly PersistEvent[],
  keyNid: (key: StateKey) => number,
  snapshotNid: (e: PersistEvent) => number,
): Promise<void> {
  const deltas: NewStateDelta[] = [];
  const members = new Map<string, NewMembership | { readonly roomNid: number; readonly userId: string; readonly membership: undefined }>();
  const servers = new Map<number, Map<string, JoinedServerChange>>();
  for (const e of events) {
    const changes = e.currentState?.changes ?? [];
    if (changes.length === 0) continue;
    const roomNid = e.head.roomNid!;
    const position = e.streamOrdering!;
    const snapshot = snapshotNid(e);
    for (const c of changes) {
      deltas.push({ position, roomNid, stateKeyNid: keyNid(c.key), eventNid: c.ref?.nid ?? null, prevEventNid: c.prevRef?.nid ?? null, snapshotNid: snapshot });
      const { type, stateKey: userId } = parseStateKey(c.key);
      if (type !== 'm.room.member') continue;
      const membership = c.event?.content.membership;
      const member = `${roomNid}\u0000${userId}`;
      if (c.event !== null && typeof membership === 'string') {
        members.set(member, { roomNid, userId, membership, eventNid: c.ref!.nid!, streamOrdering: position });
      } else {
        members.set(member, { roomNid, userId, membership: undefined });
      }
      const server = userId.slice(userId.indexOf(':') + 1);
      const change = (membership === 'join' ? 1 : 0) - (c.prevMembership === 'join' ? 1 : 0);
      if (change === 0) continue;
      let ofRoom = servers.get(roomNid);
      if (ofRoom === undefined) servers.set(roomNid, (ofRoom = new Map()));
      ofRoom.set(server, { change: (ofRoom.get(server)?.change ?? 0) + change, position });
    }
  }
  await writes.stateDeltas(deltas);
  const joined: NewMembership[] = [];
  const gone = new Map<number, string[]>();
  for (const m of members.values()) {
    if (m.membership !== undefined) joined.push(m);
    else gone.set(m.roomNid, [...(gone.get(m.roomNid) ?? []), m.userId]);
  }
  for (const [roomNid, userIds] of gone) await writes.deleteMemberships(roomNid, userIds);
  await writes.upsertMemberships(joined);
  for (const [roomNid, ofRoom] of servers) await writes.adjustJoinedServers(roomNid, ofRoom);
}

/**
 * Whether persisting these jobs writes nothing but the append (no new room, snapshot, state
 * change, redaction, relation, backward extremity, outlier upgrade, backfill position or extremity
 * set beyond one replacing one): what persist does, kept in step with it.
 */
function onlyAppends(jobs: readonly Queued[], events: readonly PersistEvent[]): boolean {
  if (jobs.some((q) => q.job.before !== undefined)) return false;
  const stored = (s: SnapshotRef | null) => s === null || s.info !== undefined;
  return events.every(
    (e) =>
      e.position !== 'backfill' &&
      e.upgradesOutlier !== true &&
      relatingTo(e) === undefined &&
      e.currentState === undefined &&
      e.redactionTarget === undefined &&
      (e.backward === undefined || (e.backward.add.length === 0 && e.backward.remove.length === 0)) &&
      stored(e.snapshotBefore) &&
      stored(e.snapshotAfter) &&
      (e.extremities === undefined || (e.head.storedExtremityCount === 1 && e.extremities.length === 1)),
  );
}

/** The relation a stored timeline event makes (none for a redacted one). */
function relatingTo(e: PersistEvent): Relation | undefined {
  if (e.status !== 'timeline' || e.position === 'none' || e.redactedBy !== undefined) return undefined;
  return relationOf(e.pdu.content);
}

/**
 * Whether relations to the event may have been stored before it: history fetched later (a
 * backfill, an outlier now placed), which newer reactions and replies can name, and any event
 * from another server (its edit may come from elsewhere, sooner). What relates to a local event
 * is always newer.
 */
function mayBeRelatedAlready(e: PersistEvent): boolean {
  return e.status === 'timeline' && (e.position === 'backfill' || e.upgradesOutlier === true || e.received === true);
}

function eventRow(e: PersistEvent, info: (s: SnapshotRef | null) => SnapshotInfo | null): Required<NewEventRow> {
  const pdu = e.pdu;
  return {
    event_id: e.ref.eventId,
    room_nid: e.head.roomNid!,
    type: pdu.type,
    state_key: pdu.state_key ?? null,
    sender: pdu.sender,
    origin_server_ts: pdu.origin_server_ts,
    depth: pdu.depth,
    stream_ordering: e.streamOrdering ?? null,
    status: e.status,
    json: e.json,
    unsigned_json: e.unsigned === undefined ? null : JSON.stringify(e.unsigned),
    redacts: e.event.redacts ?? null,
    redacted_by: e.redactedBy ?? null,
    rejection_reason: e.rejectionReason ?? null,
    state_before_nid: info(e.snapshotBefore)?.nid ?? null,
    state_after_nid: info(e.snapshotAfter)?.nid ?? null,
    txn_device_id: e.txn?.deviceId ?? null,
    txn_id: e.txn?.txnId ?? null,
  };
}
