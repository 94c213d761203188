// Read access to rooms and events, for the room server's queries and for sync. Stored events are
// immutable but for their redaction, so parsed events are cached (bounded, least recently used
// first out) and a committed redaction evicts its target. Events this process just committed are
// held apart for a moment (the syncs a send wakes all ask for it), and the latest stretch of the
// events stream is kept so that the range a woken sync covers needs no read.
//
// Positions are on the global `events` stream (EventsTable.stream_ordering). A range (after, upTo]
// excludes `after` and includes `upTo`: a sync token's events position P names "everything up to
// and including P".

import type { Kysely } from 'kysely';
import type { Pdu, StateKey } from '../protocol/events.js';
import { isHashedRoomId } from '../protocol/ids.js';
import { creatorsOf } from '../protocol/power-levels.js';
import { senderPowerIn, type SenderPower } from '../protocol/push-rules/index.js';
import { getRoomVersion, type RoomVersion } from '../protocol/room-versions.js';
import type { Schema } from '../storage/schema.js';
import {
  eventPdusByNids,
  eventsByIds,
  eventsByNids,
  eventsOfRoomsInRange,
  memberEventsOfUserInRange,
  roomEventsInRange,
  roomsWithEventsInRange,
  type EventRow,
  type StreamRange,
} from '../storage/rooms/events.js';
import { roomsOfUser, type MembershipRow } from '../storage/rooms/memberships.js';
import { roomById, roomByNid, type RoomRow } from '../storage/rooms/rooms.js';
import { readSnapshot, readSnapshotSubset } from '../storage/rooms/state-snapshots.js';
import { currentSnapshotsAt } from '../storage/sync/state-deltas.js';
import { stateEntryHistories, type StreamEvent, type StreamStateChange } from '../storage/sync/events.js';
import { toClientEvent, type ClientEvent, type ClientEventOptions } from './client-event.js';
import { bundledAggregations } from './query/aggregations.js';
import { noneErased, type ErasedSenders } from './erased-users.js';
import { EventCache, type EventCacheLimits } from './event-cache.js';
import { RecentEvents } from './recent-events.js';
import { positionOf, storedEventFromRow, type StoredEvent } from './stored-event.js';
import { joinedAt, stateChanges } from './visibility.js';

export type { StreamRange } from '../storage/rooms/events.js';

/** An event as visitEventPdus gives it: what building on it needs. */
export type EventPdu = Pick<StoredEvent, 'nid' | 'eventId' | 'pdu' | 'redactedBy'>;

/** What never changes about a room. */
export interface RoomInfo {
  readonly nid: number;
  readonly roomId: string;
  readonly version: RoomVersion;
  readonly creator: string;
}

/** Bounds of the parsed-event cache: at most this many events, ... */
const DEFAULT_EVENT_CACHE: EventCacheLimits = {
  maxEvents: 20_000,
  // ... of at most this many estimated bytes (global.cache.max_size_estimated's default) ...
  maxBytes: 1024 ** 3,
  // ... none kept longer than global.cache.max_age's default.
  maxAgeMs: 3_600_000,
};
const ROOM_CACHE = 50_000;
export interface CacheLookups {
  readonly hits: number;
  readonly misses: number;
}

/** Just-committed events held until read (then cached) or pushed out by newer ones. */
const FRESH_KEPT = 256;

export class RoomReader {
  private readonly cached: EventCache;
  private readonly roomsById = new Map<string, RoomInfo>();
  private readonly roomsByNid = new Map<number, RoomInfo>();
  private readonly fresh = new Map<number, StoredEvent>();
  /** The nids of the fresh events by id: the next event of a room cites the last one by id. */
  private readonly freshIds = new Map<string, number>();
  private readonly recent: RecentEvents;
  /** Room-info lookups answered from memory, and read from the database (for metrics). */
  private roomHits = 0;
  private roomMisses = 0;

  /**
   * `eventsPosition`: the events stream's committed position as the reader starts; `erased`: the
   * users whose events are served redacted to those who were not in the room when they were sent.
   */
  constructor(
    readonly db: Kysely<Schema>,
    eventsPosition: number,
    cacheLimits: Partial<EventCacheLimits> = {},
    private readonly erased: ErasedSenders = noneErased,
  ) {
    this.recent = new RecentEvents(eventsPosition);
    this.cached = new EventCache({ ...DEFAULT_EVENT_CACHE, ...cacheLimits });
  }

  /** How many parsed events are cached, and their estimated bytes. */
  get cacheUsage(): { events: number; bytes: number } {
    return this.cached.usage;
  }

  /** Lookups so far that found what they asked for in memory, and that did not: events, and rooms' fixed facts. */
  get cacheLookups(): { events: CacheLookups; rooms: CacheLookups } {
    return { events: { hits: this.cached.hits, misses: this.cached.misses }, rooms: { hits: this.roomHits, misses: this.roomMisses } };
  }

  // ---- rooms ----

  /** The room's fixed facts, or undefined for a room this server does not have. */
  async roomInfo(roomId: string): Promise<RoomInfo | undefined> {
    const cached = this.roomsById.get(roomId);
    if (cached !== undefined) {
      this.roomHits++;
      return cached;
    }
    this.roomMisses++;
    const row = await roomById(this.db, roomId);
    return row === undefined || row.state_snapshot_nid === null ? undefined : this.rememberRoom(row);
  }

  async roomInfoByNid(nid: number): Promise<RoomInfo | undefined> {
    const cached = this.roomsByNid.get(nid);
    if (cached !== undefined) {
      this.roomHits++;
      return cached;
    }
    this.roomMisses++;
    const row = await roomByNid(this.db, nid);
    return row === undefined || row.state_snapshot_nid === null ? undefined : this.rememberRoom(row);
  }

  /** The room's row with its current summary (name, topic, member counts ...). */
  async roomRow(roomId: string): Promise<RoomRow | undefined> {
    return roomById(this.db, roomId);
  }

  private rememberRoom(row: RoomRow): RoomInfo {
    const version = getRoomVersion(row.room_version);
    if (version === undefined) throw new Error(`room ${row.room_id} has unknown version ${row.room_version}`);
    const info: RoomInfo = { nid: Number(row.room_nid), roomId: row.room_id, version, creator: row.creator };
    if (this.roomsById.size >= ROOM_CACHE) {
      this.roomsById.clear();
      this.roomsByNid.clear();
    }
    this.roomsById.set(info.roomId, info);
    this.roomsByNid.set(info.nid, info);
    return info;
  }

  // ---- events ----

  private remember(row: EventRow): StoredEvent {
    return this.cached.get(Number(row.event_nid)) ?? this.cache(storedEventFromRow(row));
  }

  private cache(e: StoredEvent): StoredEvent {
    if (this.fresh.delete(e.nid)) this.freshIds.delete(e.eventId);
    this.cached.add(e);
    return e;
  }

  /** Drops an event from the cache (its row changed: a redaction now applies to it). */
  evict(eventId: string): void {
    const nid = this.freshIds.get(eventId);
    if (nid !== undefined) {
      this.fresh.delete(nid);
      this.freshIds.delete(eventId);
    }
    this.cached.delete(eventId);
  }

  /** Forgets everything held of a room whose rows were purged. */
  forgetRoom(roomNid: number, roomId: string): void {
    this.roomsById.delete(roomId);
    this.roomsByNid.delete(roomNid);
    for (const [nid, e] of this.fresh) {
      if (e.roomNid !== roomNid) continue;
      this.fresh.delete(nid);
      this.freshIds.delete(e.eventId);
    }
    this.cached.deleteRoom(roomNid);
    this.recent.dropRoom(roomNid);
  }

  /**
   * Events this process's writer just committed, in stream order (called before anyone is told),
   * with the current-state changes each made.
   */
  committed(events: readonly StoredEvent[], changes: ReadonlyMap<number, readonly StreamStateChange[]> = new Map()): void {
    const entries: StreamEvent[] = [];
    for (const e of events) {
      this.fresh.set(e.nid, e);
      this.freshIds.set(e.eventId, e.nid);
      if (this.fresh.size > FRESH_KEPT) {
        const [oldest, gone] = this.fresh.entries().next().value as [number, StoredEvent];
        this.fresh.delete(oldest);
        this.freshIds.delete(gone.eventId);
      }
      // Events off the timeline (and history fetched later) are not on the live stream.
      if (e.streamOrdering === undefined || e.streamOrdering <= 0) continue;
      const changed = changes.get(e.nid);
      entries.push({
        roomNid: e.roomNid,
        eventNid: e.nid,
        position: e.streamOrdering,
        type: e.type,
        stateKey: e.stateKey,
        ...(changed !== undefined && changed.length > 0 ? { changes: changed } : {}),
      });
    }
    this.recent.add(entries);
  }

  /**
   * The events stream in (after, upTo], oldest first, at most `limit` (rejected events are never
   * committed here), when that range is still held in memory; else undefined.
   */
  recentStream(after: number, upTo: number, limit: number): StreamEvent[] | undefined {
    return this.recent.range(after, upTo, limit);
  }

  /**
   * The rooms with events (those `which` picks, default all) in (after, upTo], when that range is
   * in memory and holds at most `limit` events; else undefined.
   */
  recentRooms(after: number, upTo: number, limit: number, which?: (e: StreamEvent) => boolean): Set<number> | undefined {
    const events = this.recent.range(after, upTo, limit + 1);
    if (events === undefined || events.length > limit) return undefined;
    const rooms = new Set<number>();
    for (const e of events) if (which === undefined || which(e)) rooms.add(e.roomNid);
    return rooms;
  }

  async event(eventId: string): Promise<StoredEvent | undefined> {
    return (await this.events([eventId])).get(eventId);
  }

  /** Events by id; unknown ids are absent from the result. */
  async events(eventIds: readonly string[]): Promise<Map<string, StoredEvent>> {
    const out = new Map<string, StoredEvent>();
    const missing: string[] = [];
    for (const id of eventIds) {
      const nid = this.cached.nidOf(id) ?? this.freshIds.get(id);
      let e = nid === undefined ? undefined : this.cached.get(nid);
      if (e === undefined && nid !== undefined) {
        const fresh = this.fresh.get(nid);
        if (fresh !== undefined) e = this.cache(fresh);
      }
      if (e !== undefined) out.set(id, e);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    for (const row of await eventsByIds(this.db, missing)) out.set(row.event_id, this.remember(row));
    return out;
  }

  /** Those of the events by id that are cached; nothing is read, nothing added to the cache. */
  cachedEvents(eventIds: readonly string[]): Map<string, StoredEvent> {
    const out = new Map<string, StoredEvent>();
    for (const id of eventIds) {
      const nid = this.cached.nidOf(id);
      const e = nid === undefined ? undefined : this.cached.get(nid);
      if (e !== undefined) out.set(id, e);
    }
    return out;
  }

  async eventsByNids(nids: readonly number[]): Promise<Map<number, StoredEvent>> {
    const out = new Map<number, StoredEvent>();
    const missing: number[] = [];
    for (const nid of nids) {
      let e = this.cached.get(nid);
      if (e === undefined) {
        const fresh = this.fresh.get(nid);
        if (fresh !== undefined) e = this.cache(fresh);
      }
      if (e !== undefined) out.set(nid, e);
      else missing.push(nid);
    }
    if (missing.length === 0) return out;
    for (const row of await eventsByNids(this.db, missing)) out.set(Number(row.event_nid), this.remember(row));
    return out;
  }

  /**
   * Events by nid as eventsByNids gives them, for consumers of the events stream that read each
   * event once (the push-rule pass, application service transactions): nothing is added to the
   * cache or moved in its eviction order, so a stream read in full does not push out what clients
   * read again. Unknown nids are absent from the result.
   */
  async streamedEvents(nids: readonly number[]): Promise<Map<number, StoredEvent>> {
    const out = new Map<number, StoredEvent>();
    const missing: number[] = [];
    for (const nid of nids) {
      const e = this.cached.peek(nid) ?? this.fresh.get(nid);
      if (e !== undefined) out.set(nid, e);
      else missing.push(nid);
    }
    if (missing.length === 0) return out;
    for (const row of await eventsByNids(this.db, missing)) {
      const nid = Number(row.event_nid);
      out.set(nid, this.cached.peek(nid) ?? storedEventFromRow(row));
    }
    return out;
  }

  /**
   * Visits events by nid in batches of `batchSize`, as id, PDU and redaction only, without adding
   * them to the cache: for reads of many events kept elsewhere (a room head's state), which would
   * push out what the cache holds for everyone. Unknown nids are skipped.
   */
  async visitEventPdus(nids: readonly number[], visit: (e: EventPdu) => void, batchSize = 1000): Promise<void> {
    for (let i = 0; i < nids.length; i += batchSize) {
      const missing: number[] = [];
      for (const nid of nids.slice(i, i + batchSize)) {
        const e = this.cached.peek(nid) ?? this.fresh.get(nid);
        if (e !== undefined) visit(e);
        else missing.push(nid);
      }
      for (const row of await eventPdusByNids(this.db, missing)) {
        visit({ nid: row.event_nid, eventId: row.event_id, pdu: JSON.parse(row.json) as Pdu, redactedBy: row.redacted_by ?? undefined });
      }
    }
  }

  /**
   * A room's events with stream_ordering in (after, upTo], at most `limit`: oldest first for
   * 'asc', newest first for 'desc'. Rejected events are left out. No visibility filtering: see
   * HistoryVisibility (rooms/query/visibility.ts) for what a user may see.
   */
  async roomEvents(roomNid: number, range: StreamRange, order: 'asc' | 'desc', limit: number): Promise<StoredEvent[]> {
    const rows = await roomEventsInRange(this.db, roomNid, range, order, limit);
    return rows.map((r) => this.remember(r));
  }

  /**
   * Events of several rooms with stream_ordering in (after, upTo], in stream order ('asc' oldest
   * first), at most `limit`: what happened in a user's rooms since a sync token.
   */
  async eventsOfRooms(roomNids: readonly number[], range: StreamRange, order: 'asc' | 'desc', limit: number): Promise<StoredEvent[]> {
    const rows = await eventsOfRoomsInRange(this.db, roomNids, range, order, limit);
    return rows.map((r) => this.remember(r));
  }

  /** Of these rooms, those with events in (after, upTo], mapped to their latest position there. */
  async roomsWithEvents(roomNids: readonly number[], range: StreamRange): Promise<Map<number, number>> {
    return roomsWithEventsInRange(this.db, roomNids, range);
  }

  /** The member events about `userId` in (after, upTo], oldest first: which rooms they joined, left, were invited to ... */
  async membershipChanges(userId: string, range: StreamRange): Promise<StoredEvent[]> {
    const rows = await memberEventsOfUserInRange(this.db, userId, range);
    return rows.map((r) => this.remember(r));
  }

  /** The user's current memberships (all, or those listed), oldest change first, with room ids. */
  async roomsOfUser(userId: string, memberships?: readonly string[]): Promise<(MembershipRow & { room_id: string })[]> {
    return roomsOfUser(this.db, userId, memberships);
  }

  // ---- state ----

  /** The state a snapshot holds, as stored events. */
  async stateOfSnapshot(snapshotNid: number): Promise<Map<StateKey, StoredEvent>> {
    const ids = await readSnapshot(this.db, snapshotNid);
    const events = await this.eventsByNids([...ids.values()]);
    const out = new Map<StateKey, StoredEvent>();
    for (const [key, nid] of ids) {
      const e = events.get(nid);
      if (e !== undefined) out.set(key, e);
    }
    return out;
  }

  /**
   * Who may notify how (push rules' sender power) by a snapshot's power levels; in a v12 room (an
   * id without a server) its creators' power is infinite, though they are never listed.
   */
  async senderPowerAt(snapshotNid: number, roomId: string): Promise<(sender: string) => SenderPower> {
    const [levels] = (await this.stateSubsetOfSnapshot(snapshotNid, 'm.room.power_levels', [''])).values();
    const [create] = isHashedRoomId(roomId) ? (await this.stateSubsetOfSnapshot(snapshotNid, 'm.room.create', [''])).values() : [];
    return senderPowerIn(levels?.pdu.content, create === undefined ? undefined : creatorsOf(create.sender, create.pdu.content));
  }

  /** Of a snapshot's state, the events of one type with the given state keys (e.g. some members). */
  async stateSubsetOfSnapshot(snapshotNid: number, type: string, stateKeys: readonly string[] | 'all'): Promise<Map<StateKey, StoredEvent>> {
    const ids = await readSnapshotSubset(this.db, snapshotNid, type, stateKeys);
    const events = await this.eventsByNids([...ids.values()]);
    const out = new Map<StateKey, StoredEvent>();
    for (const [key, nid] of ids) {
      const e = events.get(nid);
      if (e !== undefined) out.set(key, e);
    }
    return out;
  }

  /** The room's current state. */
  async currentState(roomId: string): Promise<Map<StateKey, StoredEvent>> {
    const row = await roomById(this.db, roomId);
    if (row?.state_snapshot_nid == null) return new Map();
    return this.stateOfSnapshot(Number(row.state_snapshot_nid));
  }

  /** The state after an event (including the event itself when it is a state event). */
  async stateAfter(e: StoredEvent): Promise<Map<StateKey, StoredEvent>> {
    return e.stateAfterNid === undefined ? new Map() : this.stateOfSnapshot(e.stateAfterNid);
  }

  /** The state before an event. */
  async stateBefore(e: StoredEvent): Promise<Map<StateKey, StoredEvent>> {
    return e.stateBeforeNid === undefined ? new Map() : this.stateOfSnapshot(e.stateBeforeNid);
  }

  /**
   * The room's current state as it stood at a position of the events stream (empty before the
   * room had any state).
   */
  async stateAt(roomNid: number, position: number): Promise<Map<StateKey, StoredEvent>> {
    const snapshot = (await currentSnapshotsAt(this.db, [roomNid], position)).get(roomNid);
    return snapshot === undefined ? new Map() : this.stateOfSnapshot(snapshot);
  }

  // ---- client format ----

  /**
   * Events in client format, each redacted one with its redaction in unsigned.redacted_because
   * (fetched in one batch).
   */
  async clientEvents(events: readonly StoredEvent[], options: Omit<ClientEventOptions, 'redactedBecause' | 'pruned'>): Promise<ClientEvent[]> {
    const redactionIds = new Set<string>();
    for (const e of events) if (e.redactedBy !== undefined) redactionIds.add(e.redactedBy);
    const redactions = redactionIds.size === 0 ? new Map<string, StoredEvent>() : await this.events([...redactionIds]);
    const pruned = this.erased.size === 0 ? undefined : await this.erasedFor(events, options.viewer?.userId);
    const relations = await bundledAggregations(this, events, options);
    return events.map((e) => {
      const redaction = e.redactedBy === undefined ? undefined : redactions.get(e.redactedBy);
      const bundled = relations.size === 0 ? undefined : relations.get(e.eventId);
      if (redaction === undefined && bundled === undefined && pruned?.has(e.nid) !== true) return toClientEvent(e, options);
      return toClientEvent(e, {
        ...options,
        ...(redaction !== undefined ? { redactedBecause: toClientEvent(redaction, options) } : {}),
        ...(pruned?.has(e.nid) === true ? { pruned: true } : {}),
        ...(bundled !== undefined ? { relations: bundled } : {}),
      });
    });
  }

  /**
   * Of `events`, those `viewer` gets redacted because their user's data was erased (by nid): the
   * member events about an erased user, for everyone (the reference server prunes them in place);
   * an erased user's messages, for whoever was not joined when they were sent. Their other state
   * events (a room's name, say) are part of the room and stay. Reads the viewer's membership
   * history only for the rooms of erased users' messages, in one statement.
   */
  private async erasedFor(events: readonly StoredEvent[], viewer: string | undefined): Promise<Set<number>> {
    const out = new Set<number>();
    const unsure: StoredEvent[] = [];
    for (const e of events) {
      if (e.type === 'm.room.member') {
        if (e.stateKey !== undefined && this.erased.has(e.stateKey)) out.add(e.nid);
      } else if (e.stateKey === undefined && this.erased.has(e.sender) && e.sender !== viewer) {
        if (viewer === undefined) out.add(e.nid);
        else unsure.push(e);
      }
    }
    if (unsure.length === 0 || viewer === undefined) return out;
    const histories = await stateEntryHistories(this.db, [...new Set(unsure.map((e) => e.roomNid))], 'm.room.member', viewer);
    const memberships = new Map([...histories].map(([roomNid, rows]) => [roomNid, stateChanges(rows, 'membership', 'leave')]));
    for (const e of unsure) if (!joinedAt(memberships.get(e.roomNid) ?? [], positionOf(e))) out.add(e.nid);
    return out;
  }
}
