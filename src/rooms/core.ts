// The room server's machinery shared by every operation: room heads (loaded once, kept in
// memory), building events against them, the writer, idempotent transaction ids, and waking
// syncs after each commit.
//
// Ordering: everything that decides a room's next event runs in the room's queue (room-queue.ts),
// one task at a time; a local send's task builds its event synchronously against the head, so each
// event sees the state its predecessors left. The writer commits events in the order decided.

import type { Kysely } from 'kysely';
import { canonicalJson } from '../protocol/canonical-json.js';
import { HearthError } from '../protocol/errors.js';
import { relationOf } from '../protocol/relations.js';
import { parseStateKey, stateKey, type StateKey } from '../protocol/events.js';
import type { SigningKey } from '../protocol/signing.js';
import type { DialectName } from '../storage/database.js';
import type { Schema } from '../storage/schema.js';
import type { EventStatus } from '../storage/tables/rooms.js';
import type { StreamStateChange } from '../storage/sync/events.js';
import { HotRoomQueries } from '../storage/rooms/hot-queries.js';
import { StateKeyNids } from '../storage/rooms/state-snapshots.js';
import type { StreamBus } from '../streams/bus.js';
import { buildEvent, type BuildContext, type EventDraft } from './builder.js';
import { loadRoomHead, stateEventLoader } from './head-loader.js';
import { LOADED_STATE_LIMIT, RoomHead, StateNotLoaded, type StateEventLoader } from './head.js';
import type { RoomVersion } from '../protocol/room-versions.js';
import { insertRoom, roomById } from '../storage/rooms/rooms.js';
import { purgeRoomRows } from '../storage/rooms/purge.js';
import type { ErasedSenders } from './erased-users.js';
import type { EventCacheLimits } from './event-cache.js';
import type { PersistEvent } from './persist-event.js';
import { RoomReader } from './reader.js';
import { RoomQueue } from './room-queue.js';
import type { KeyRing } from './input/key-ring.js';
import type { RemoteEvents } from './input/remote-events.js';
import { storedEventOf } from './stored-event.js';
import { TxnIds, type TxnKey } from './txn-ids.js';
import { EventWriter, type WriteJob } from './writer.js';

/** A user's display name and avatar, as member events carry them. */
export interface MemberProfile {
  readonly displayname?: string | null;
  readonly avatar_url?: string | null;
}

/** Where member events find a user's profile (the users area provides it). */
export interface ProfileSource {
  profile(userId: string): Promise<MemberProfile | undefined>;
}

/**
 * Application services asked about a local user or alias unknown here, which they may create
 * before answering (the appservice area provides it). Whether one did.
 */
export interface AppServiceQueries {
  queryUser(userId: string): Promise<boolean>;
  queryAlias(alias: string): Promise<boolean>;
}

export interface RoomServiceDeps {
  readonly db: Kysely<Schema>;
  readonly dialect: DialectName;
  readonly serverName: string;
  readonly signingKey: SigningKey;
  readonly notifier: StreamBus;
  /** Room version for rooms created without one (default: the protocol core's default). */
  readonly defaultRoomVersion?: string;
  readonly profiles?: ProfileSource;
  /** Who may create unknown local invitees and aliases on demand (default: no one). */
  readonly appServiceQueries?: AppServiceQueries;
  /** Clock for origin_server_ts and ages (tests pin it). */
  readonly now?: () => number;
  /** Bounds of the parsed-event cache (default: 20,000 events, 1 GB estimated, an hour). */
  readonly eventCache?: Partial<EventCacheLimits>;
  /** Room heads (current state in memory) kept; idle ones past this are dropped (default 10,000). */
  readonly maxRoomHeads?: number;
  /**
   * State events each room head keeps parsed beyond the pinned ones (create, power levels, join
   * rules, what summaries show): members and other state, loaded when read (default 1,024).
   */
  readonly maxLoadedState?: number;
  /** Users whose data was erased: their events are served redacted to most (default: none). */
  readonly erasedUsers?: ErasedSenders;
  /** Other servers' signing keys, for events received from them (default: none known). */
  readonly keyRing?: KeyRing;
  /** Where missing events are fetched from (default: nowhere; gaps stay gaps). */
  readonly remoteEvents?: RemoteEvents;
}

/** A draft, or the id of an event already stored that the request amounts to. */
export type DraftOrExisting = EventDraft | { readonly existingEventId: string };

export class RoomCore {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly reader: RoomReader;
  readonly build: BuildContext;
  readonly profiles: ProfileSource | undefined;
  readonly appServiceQueries: AppServiceQueries | undefined;
  readonly now: () => number;
  private readonly notifier: StreamBus;
  private readonly stateKeys = new StateKeyNids();
  private readonly writer: EventWriter;
  private readonly heads = new Map<string, RoomHead>();
  private readonly loading = new Map<string, Promise<RoomHead | undefined>>();
  private readonly txnIds: TxnIds;
  private readonly maxHeads: number;
  /** Per head: parsed state events beyond the pinned ones (RoomHead). */
  readonly maxLoadedState: number;
  private readonly loadState: StateEventLoader;
  /** Each room's ordered queue: local sends and received events decide one at a time per room. */
  readonly queue = new RoomQueue();
  /** Events committed by this process, by status (for metrics). */
  readonly persisted: Record<EventStatus, number> = { timeline: 0, outlier: 0, rejected: 0, soft_failed: 0 };
  /** Aliases of rooms being created right now, so two creations cannot both take one. */
  readonly reservedAliases = new Set<string>();

  constructor(deps: RoomServiceDeps) {
    this.db = deps.db;
    this.serverName = deps.serverName;
    this.notifier = deps.notifier;
    this.profiles = deps.profiles;
    this.appServiceQueries = deps.appServiceQueries;
    this.now = deps.now ?? Date.now;
    this.reader = new RoomReader(deps.db, deps.notifier.current().events, deps.eventCache, deps.erasedUsers);
    this.maxHeads = deps.maxRoomHeads ?? 10_000;
    this.maxLoadedState = deps.maxLoadedState ?? LOADED_STATE_LIMIT;
    this.loadState = stateEventLoader(this.reader);
    this.build = { serverName: deps.serverName, signingKey: deps.signingKey, now: this.now };
    const queries = new HotRoomQueries(deps.db, deps.dialect);
    this.txnIds = new TxnIds(deps.db, queries);
    this.writer = new EventWriter(deps.db, this.stateKeys, queries, {
      committed: (events) => this.committed(events),
      failed: (heads) => {
        for (const h of heads) if (this.heads.get(h.roomId) === h) this.heads.delete(h.roomId);
      },
    });
  }

  /** The room's live head, loading it when needed; undefined for a room this server does not have. */
  async findHead(roomId: string): Promise<RoomHead | undefined> {
    const known = this.heads.get(roomId);
    if (known?.live === true) {
      // Most recently used last, for eviction.
      this.heads.delete(roomId);
      this.heads.set(roomId, known);
      return known;
    }
    let pending = this.loading.get(roomId);
    if (pending === undefined) {
      pending = loadRoomHead(this.db, this.reader, this.stateKeys, roomId, this.maxLoadedState).then(
        (head) => {
          this.loading.delete(roomId);
          if (head !== undefined) this.remember(head);
          return head;
        },
        (err: unknown) => {
          this.loading.delete(roomId);
          throw err;
        },
      );
      this.loading.set(roomId, pending);
    }
    return pending;
  }

  /** The room's live head; 404 M_NOT_FOUND for an unknown room. */
  async head(roomId: string): Promise<RoomHead> {
    const head = await this.findHead(roomId);
    if (head === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
    return head;
  }

  /**
   * Sends one event into an existing room. `make` turns the room's head into a draft in the same
   * turn the event is built, so checks it makes against the head hold for the event. A state
   * draft identical to the current state (same sender and content) stores nothing and returns the
   * current event's id. With `txn`, a repeated (sender, device, txnId) returns the first event.
   */
  async send(
    roomId: string,
    make: (head: RoomHead) => DraftOrExisting,
    txn?: { sender: string; deviceId: string; txnId: string },
    /** Checks a new event must pass (not run for a transaction id seen before). */
    check?: () => Promise<void>,
  ): Promise<string> {
    for (;;) {
      const head = await this.head(roomId);
      const key: TxnKey | undefined = txn === undefined ? undefined : { roomNid: head.roomNid!, sender: txn.sender, deviceId: txn.deviceId };
      if (key !== undefined) {
        const earlier = await this.txnIds.find(key, txn!.txnId);
        if (earlier !== undefined) return earlier;
      }
      await check?.();
      // Decided in the room's queue, without awaiting: the draft and the event see the same head,
      // and no other send with this transaction id can start in between. The task hands back the
      // write's promise wrapped, so the queue moves on once the event is decided, not stored.
      type Sent = { id: string | Promise<string> } | undefined;
      const attempt = (): Sent => {
        // A head dropped while this send waited (its write failed, or it was evicted) is reloaded.
        if (!head.live) return undefined;
        if (key !== undefined) {
          const raced = this.txnIds.peek(key, txn!.txnId);
          if (raced !== undefined) return { id: raced };
        }
        const draft = make(head);
        if ('existingEventId' in draft) return { id: draft.existingEventId };
        const existing = identicalState(head, draft);
        if (existing !== undefined) return { id: existing };
        const done = this.write(head, { events: [buildEvent(head, draft, this.build)] });
        if (key !== undefined) this.txnIds.record(key, txn!.txnId, done);
        return { id: done };
      };
      const sent = await this.queue.run(roomId, (): Sent | Promise<Sent> => {
        try {
          return attempt();
        } catch (err) {
          if (!(err instanceof StateNotLoaded)) throw err;
          // State the draft or its authorization reads is not loaded: loaded here, still in the
          // queue (nothing has changed yet), then tried again.
          return this.loadAndRetry(head, err.keys, attempt);
        }
      });
      if (sent !== undefined) return sent.id;
    }
  }

  /** Loads `keys` into the head and runs `attempt` again, as long as it asks for more state. */
  private async loadAndRetry<T>(head: RoomHead, keys: readonly StateKey[], attempt: () => T): Promise<T> {
    // Everything asked for so far is loaded (and kept) together: a draft reads only a few keys.
    const wanted = new Set(keys);
    for (let round = 0; ; round++) {
      await head.load([...wanted]);
      try {
        return attempt();
      } catch (err) {
        if (!(err instanceof StateNotLoaded) || round >= 8) throw err;
        for (const k of err.keys) wanted.add(k);
      }
    }
  }

  /** Stores events decided in the room's queue; resolves with the id of the last once stored. */
  writeDecided(head: RoomHead, events: readonly PersistEvent[]): Promise<string> {
    return this.write(head, { events });
  }

  /** Queues a job; resolves with the id of its last event once it is stored. */
  private write(head: RoomHead, job: WriteJob): Promise<string> {
    const eventId = job.events[job.events.length - 1]!.ref.eventId;
    const done = this.writer.write(job).then(() => eventId);
    head.pending++;
    head.unwritten.set(eventId, done);
    const settle = () => {
      head.pending--;
      head.unwritten.delete(eventId);
    };
    done.then(settle, settle);
    return done;
  }

  /**
   * A head for a room this server does not have yet (joined through another server, or known by
   * an invite): the room's row is made, or taken when an earlier attempt made it. The head is the
   * room's once an event written on it is stored (writeOnNewHead).
   */
  async newRemoteHead(roomId: string, version: RoomVersion, creator: string, createdTs: number): Promise<RoomHead> {
    const row = await roomById(this.db, roomId);
    const head = new RoomHead(roomId, version, this.maxLoadedState);
    head.roomNid = row !== undefined ? Number(row.room_nid) : await insertRoom(this.db, { roomId, version: version.id, creator, createdTs, isPublic: false });
    return head;
  }

  /**
   * Stores an event decided on a head that may be new to the core (a join through another server,
   * an out-of-band invite); the head is the room's from then on.
   */
  async writeOnNewHead(head: RoomHead, join: PersistEvent): Promise<string> {
    const id = await this.write(head, { events: [join] });
    this.remember(head);
    return id;
  }

  /** Writes events built on a head of its own (a new room); registers the head once stored. */
  async writeNewRoom(head: RoomHead, events: readonly PersistEvent[], before: WriteJob['before']): Promise<void> {
    await this.write(head, { events, ...(before !== undefined ? { before } : {}) });
    this.remember(head);
  }

  /**
   * Removes a room from the database and from memory, in its queue once its pending writes are
   * stored, so nothing decides on or writes to it meanwhile. Whether the room was known.
   */
  purgeRoom(roomId: string): Promise<boolean> {
    return this.queue.run(roomId, async () => {
      const head = await this.findHead(roomId);
      if (head !== undefined) {
        await Promise.allSettled([...head.unwritten.values()]);
        head.live = false;
        this.heads.delete(roomId);
      }
      const row = await roomById(this.db, roomId);
      const purged = await purgeRoomRows(this.db, roomId);
      if (row !== undefined) this.reader.forgetRoom(Number(row.room_nid), roomId);
      return purged;
    });
  }

  /** Keeps a head, and drops the least recently used idle ones past the limit. */
  private remember(head: RoomHead): void {
    head.loader ??= this.loadState;
    this.heads.delete(head.roomId);
    this.heads.set(head.roomId, head);
    if (this.heads.size <= this.maxHeads) return;
    for (const [roomId, h] of this.heads) {
      if (this.heads.size <= this.maxHeads) break;
      if (h.pending > 0 || h === head) continue;
      h.live = false;
      this.heads.delete(roomId);
    }
  }

  /** Jobs waiting for the writer's next transaction. */
  get writerQueue(): number {
    return this.writer.queuedJobs;
  }

  private committed(events: readonly PersistEvent[]): void {
    const changes = new Map<number, StreamStateChange[]>();
    for (const e of events) {
      this.persisted[e.status]++;
      if (e.currentState === undefined || e.currentState.changes.length === 0) continue;
      changes.set(
        e.ref.nid!,
        e.currentState.changes.map((c) => {
          const { type, stateKey: key } = parseStateKey(c.key);
          return { type, stateKey: key, eventNid: c.ref?.nid ?? null, prevEventNid: c.prevRef?.nid ?? null };
        }),
      );
    }
    // A row that changed (an outlier now received with its state) is read afresh.
    for (const e of events) if (e.upgradesOutlier === true) this.reader.evict(e.ref.eventId);
    this.reader.committed(events.map(storedEventOf), changes);
    const roomIds = new Set<string>();
    const userIds = new Set<string>();
    let position = 0;
    for (const e of events) {
      if (e.redactionTarget !== undefined) this.reader.evict(e.redactionTarget);
      // The event related to is read again: its row is marked as having relations.
      const related = e.status === 'timeline' ? relationOf(e.pdu.content) : undefined;
      if (related !== undefined) this.reader.evict(related.eventId);
      // Only the stream moving wakes syncs; history and off-timeline events are not news.
      if (e.position !== 'stream') continue;
      roomIds.add(e.head.roomId);
      for (const c of e.currentState?.changes ?? []) {
        const { type, stateKey: userId } = parseStateKey(c.key);
        if (type === 'm.room.member') userIds.add(userId);
      }
      if (e.event.type === 'm.room.member' && e.event.state_key !== undefined) userIds.add(e.event.state_key);
      if (e.streamOrdering! > position) position = e.streamOrdering!;
    }
    if (position > 0) this.notifier.notify({ stream: 'events', position, roomIds: [...roomIds], userIds: [...userIds] });
  }
}

/** The current state event a state draft would merely repeat (once it is stored), if any. */
function identicalState(head: RoomHead, draft: EventDraft): string | Promise<string> | undefined {
  if (draft.stateKey === undefined) return undefined;
  const current = head.state.get(stateKey(draft.type, draft.stateKey));
  if (current === undefined || current.sender !== draft.sender) return undefined;
  let same: boolean;
  try {
    same = canonicalJson(current.content, { strict: false }) === canonicalJson(draft.content, { strict: false });
  } catch {
    same = false;
  }
  return same ? (head.unwritten.get(current.event_id) ?? current.event_id) : undefined;
}
