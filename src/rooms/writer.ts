// The one writer of the room graph. Built events are queued here in the order they were built and
// committed in batches: whatever was queued while the previous transaction ran goes into the next
// one, so concurrent sends (into one room or many) share a transaction while a lone sender waits
// for no one. Everything of an event is in its batch's transaction: the event row and its stream
// position, state snapshot, room summary, membership, forward extremities and transaction id.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseStateKey, type StateKey } from '../protocol/events.js';
import type { Schema } from '../storage/schema.js';
import { setRedactedBy, type NewEventRow } from '../storage/rooms/events.js';
import { setForwardExtremities } from '../storage/rooms/extremities.js';
import type { HotRoomQueries } from '../storage/rooms/hot-queries.js';
import { upsertMembership } from '../storage/rooms/memberships.js';
import { updateRoomSummary } from '../storage/rooms/rooms.js';
import { insertSnapshotEntries, insertSnapshotRow, type StateKeyNids } from '../storage/rooms/state-snapshots.js';
import type { BuiltEvent } from './builder.js';
import type { RoomHead, SnapshotRef } from './head.js';

export interface WriteJob {
  readonly events: readonly BuiltEvent[];
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
  committed(events: readonly BuiltEvent[]): void;
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
      return;
    } catch (err) {
      this.stateKeys.clear();
      if (live.length === 1) {
        this.fail(live, err);
        return;
      }
    }
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
      }
    }
    if (failed.size > 0) this.markDead(failed);
  }

  /** Writes the jobs in one transaction; resolves them once it committed. */
  private async commit(jobs: readonly Queued[]): Promise<void> {
    const events = jobs.flatMap((q) => q.job.events);
    const extremityCounts = await this.db.transaction().execute((trx) => this.persist(trx, jobs, events));
    for (const [head, count] of extremityCounts) head.storedExtremityCount = count;
    try {
      this.hooks.committed(events);
    } finally {
      for (const q of jobs) q.resolve();
    }
  }

  private fail(jobs: readonly Queued[], err: unknown): void {
    this.markDead(new Set(jobs.flatMap((q) => q.job.events.map((e) => e.head))));
    for (const q of jobs) q.reject(err);
  }

  private markDead(heads: Set<RoomHead>): void {
    for (const h of heads) h.live = false;
    this.hooks.failed(heads);
  }

  private async persist(trx: Kysely<Schema>, batch: readonly Queued[], events: readonly BuiltEvent[]): Promise<Map<RoomHead, number>> {
    for (const q of batch) await q.job.before?.(trx);
    const first = await this.queries.allocateEventPositions(trx, events.length);
    events.forEach((e, i) => (e.streamOrdering = first + i));

    // Snapshot rows first: event rows point at them. Their entries follow the event rows.
    const snapshots: { event: BuiltEvent; snapshot: SnapshotRef }[] = [];
    for (const e of events) {
      const s = e.snapshotAfter;
      if (s === null || s === e.snapshotBefore) continue;
      const parent = s.parent === null ? null : s.parent.info!;
      s.info = await insertSnapshotRow(trx, e.head.roomNid!, parent);
      snapshots.push({ event: e, snapshot: s });
    }

    for (const e of events) e.ref.nid = await this.queries.insertEventRow(trx, eventRow(e));

    for (const { snapshot } of snapshots) {
      const entries: [number, number][] = [];
      for (const [key, ref] of snapshot.entries) entries.push([await this.keyNid(trx, key), ref.nid!]);
      await insertSnapshotEntries(trx, snapshot.info!.nid, entries);
    }

    for (const e of events) {
      if (e.event.type === 'm.room.member' && typeof e.event.content.membership === 'string') {
        await upsertMembership(trx, {
          roomNid: e.head.roomNid!,
          userId: e.event.state_key!,
          membership: e.event.content.membership,
          eventNid: e.ref.nid!,
          streamOrdering: e.streamOrdering!,
        });
      }
      if (e.redactionTarget !== undefined) await setRedactedBy(trx, e.redactionTarget, e.ref.eventId);
    }

    // Per room: the latest summary and snapshot, and the new forward extremities.
    const lastOfRoom = new Map<RoomHead, BuiltEvent>();
    const summaryOfRoom = new Map<RoomHead, BuiltEvent>();
    for (const e of events) {
      lastOfRoom.set(e.head, e);
      if (e.summary !== undefined) summaryOfRoom.set(e.head, e);
    }
    for (const [head, e] of summaryOfRoom) {
      await updateRoomSummary(trx, head.roomNid!, { state_snapshot_nid: e.snapshotAfter!.info!.nid, ...e.summary });
    }
    const counts = new Map<RoomHead, number>();
    for (const [head, e] of lastOfRoom) {
      if (head.storedExtremityCount === 1) await this.queries.moveForwardExtremity(trx, head.roomNid!, e.ref.nid!);
      else await setForwardExtremities(trx, head.roomNid!, [e.ref.nid!], head.storedExtremityCount);
      counts.set(head, 1);
    }
    return counts;
  }

  private async keyNid(trx: Kysely<Schema>, key: StateKey): Promise<number> {
    const known = this.stateKeys.cached(key);
    if (known !== undefined) return known;
    const { type, stateKey } = parseStateKey(key);
    return this.stateKeys.getOrCreate(trx, type, stateKey);
  }
}

function eventRow(e: BuiltEvent): Required<NewEventRow> {
  const pdu = e.pdu;
  return {
    event_id: e.ref.eventId,
    room_nid: e.head.roomNid!,
    type: pdu.type,
    state_key: pdu.state_key ?? null,
    sender: pdu.sender,
    origin_server_ts: pdu.origin_server_ts,
    depth: pdu.depth,
    stream_ordering: e.streamOrdering!,
    json: e.json,
    unsigned_json: e.unsigned === undefined ? null : JSON.stringify(e.unsigned),
    redacts: e.event.redacts ?? null,
    redacted_by: null,
    status: 'timeline',
    rejection_reason: null,
    state_before_nid: e.snapshotBefore?.info?.nid ?? null,
    state_after_nid: e.snapshotAfter?.info?.nid ?? null,
    txn_device_id: e.txn?.deviceId ?? null,
    txn_id: e.txn?.txnId ?? null,
  };
}
