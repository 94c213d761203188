// GET /events (client API, deprecated since r0, still used by bridges and tools): the legacy event
// stream. A token is a sync token; from it, the events of the user's joined rooms (and the member
// events about the user) as the user may see them, typing and receipts in those rooms, presence
// and account data, as one flat `chunk` of client events. With nothing new it waits on the same
// notifier as /sync, holding what a waiting sync holds, until something concerns the user, its
// timeout passes, the client goes away or the server stops.
//
// With `room_id`, only that room: one the user is joined to, or a world-readable one (peeking).
// Also GET /events/{eventId}: one event, as GET /rooms/{roomId}/event/{eventId} answers it.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/json.js';
import type { Actor } from '../rooms/actor.js';
import type { ClientEvent } from '../rooms/client-event.js';
import type { RoomReader } from '../rooms/reader.js';
import { byStreamOrder, isServed, membershipOf as memberEventMembership, positionOf, type StoredEvent } from '../rooms/stored-event.js';
import { membersOfRoom, membershipOf } from '../storage/rooms/memberships.js';
import type { Schema } from '../storage/schema.js';
import type { AccountDataChanges } from '../users/account-data.js';
import type { PresenceEvent, PresenceState } from '../users/presence.js';
import { HistoryRecall } from './history-recall.js';
import { IgnoredUsers } from './ignored-users.js';
import { previousMembership } from './room-plans.js';
import type { StreamBus } from '../streams/bus.js';
import { SharedReads } from './shared-reads.js';
import { SinceJoin } from './since-join.js';
import { atLeast, clamp, MAX_SYNC_TIMEOUT_MS } from './sync-service.js';
import { decodeSyncToken, encodeSyncToken } from '../streams/token.js';
import type { StreamName, StreamPositions } from '../streams/positions.js';

/** Room events per answer when the client names no limit (Synapse's default). */
export const DEFAULT_EVENT_STREAM_LIMIT = 10;
const MEMBER = 'm.room.member';

export interface EventStreamDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly rooms: RoomReader;
  readonly typing: { typingSince(roomIds: Iterable<string>, position: number): Map<string, string[]>; currentPosition(): number };
  readonly receipts: { receiptsSince(viewerId: string, roomIds: Iterable<string>, afterPosition: number): Promise<Map<string, object[]>> };
  readonly presence: {
    presenceSince(userId: string, afterPosition: number): Promise<PresenceEvent[]>;
    setPresenceFromSync(userId: string, setPresence?: PresenceState): Promise<() => void>;
  };
  readonly accountData: {
    accountDataSince(userId: string, afterPosition: number): Promise<AccountDataChanges>;
    ignoredUsers(userId: string): Promise<Set<string>>;
  };
  /** One event of a room as the user may see it (RoomService.getEvent): 404 otherwise. */
  readonly roomEvent: (actor: Actor, roomId: string, eventId: string) => Promise<ClientEvent>;
  readonly now?: () => number;
  readonly maxTimeoutMs?: number;
  /** Events-stream ranges up to this long are read whole and picked from (default 1000). */
  readonly windowMaxEvents?: number;
}

export interface EventStreamRequest {
  readonly userId: string;
  readonly deviceId: string | null;
  readonly isGuest: boolean;
  /** A token from an earlier answer, /initialSync or /sync; none: from now. */
  readonly from?: string;
  readonly timeoutMs: number;
  /** Most room events in one answer. */
  readonly limit: number;
  readonly roomId?: string;
  readonly onClientGone?: (listener: () => void) => () => void;
}

export interface EventStreamAnswer {
  chunk: JsonObject[];
  start: string;
  end: string;
}

/** The rooms an answer covers. */
interface Scope {
  readonly roomIds: string[];
  readonly roomNids: Set<number>;
  /** Per joined room, where the user's join is: events from there on need no visibility check. */
  readonly joinedFrom: Map<number, number>;
  /** With `room_id`: only member events about the user in that room are taken. */
  readonly onlyRoomNid: number | undefined;
}

export class EventStreamService {
  private readonly now: () => number;
  private readonly maxTimeoutMs: number;
  private readonly shared: SharedReads;
  private readonly ignored: IgnoredUsers;
  /** Long-polls waiting now, ended at once when the server stops. */
  private readonly waits = new Set<() => void>();
  private stopped = false;

  constructor(private readonly deps: EventStreamDeps) {
    this.now = deps.now ?? Date.now;
    this.maxTimeoutMs = deps.maxTimeoutMs ?? MAX_SYNC_TIMEOUT_MS;
    this.shared = new SharedReads(deps.db, deps.rooms, deps.windowMaxEvents);
    this.ignored = new IgnoredUsers((userId) => deps.accountData.ignoredUsers(userId));
  }

  async stream(req: EventStreamRequest): Promise<EventStreamAnswer> {
    const given = req.from === undefined ? undefined : decodeSyncToken(req.from);
    // Presence first: the user coming online is not news to their own stream.
    const release = req.isGuest ? () => {} : await this.deps.presence.setPresenceFromSync(req.userId, 'online');
    try {
      const current = this.currentPositions();
      const from: StreamPositions = given === undefined ? current : clamp(given, current);
      const scope = await this.scope(req.userId, req.roomId);
      const deadline = this.now() + Math.max(0, Math.min(req.timeoutMs, this.maxTimeoutMs));
      const start = encodeSyncToken(from);
      let since = from;
      for (;;) {
        const upTo = atLeast(this.currentPositions(), since);
        const built = await this.build(req, scope, since, upTo, from);
        const answer = { chunk: built.chunk, start, end: encodeSyncToken(built.end) };
        const remaining = deadline - this.now();
        if (built.chunk.length > 0 || remaining <= 0 || this.stopped) return answer;
        if (!(await this.wait(req, scope, upTo, remaining))) return answer;
        since = built.end;
      }
    } finally {
      release();
    }
  }

  /** GET /events/{eventId}: the event if the user may see it, else 404 (an unknown one too). */
  async event(actor: Actor, eventId: string): Promise<ClientEvent> {
    const e = await this.deps.rooms.event(eventId);
    if (e === undefined || !isServed(e)) throw HearthError.notFound('Event not found');
    return this.deps.roomEvent(actor, e.roomId, eventId);
  }

  /** The server is stopping: waiting requests answer now, later ones do not wait. */
  stopping(): void {
    this.stopped = true;
    for (const cancel of [...this.waits]) cancel();
  }

  private currentPositions(): Record<StreamName, number> {
    const positions = this.deps.notifier.current();
    return { ...positions, typing: Math.max(positions.typing, this.deps.typing.currentPosition()) };
  }

  private async scope(userId: string, roomId: string | undefined): Promise<Scope> {
    const { rooms, db } = this.deps;
    if (roomId === undefined) {
      const rows = await rooms.roomsOfUser(userId, ['join']);
      return {
        roomIds: rows.map((r) => r.room_id),
        roomNids: new Set(rows.map((r) => Number(r.room_nid))),
        joinedFrom: new Map(rows.map((r) => [Number(r.room_nid), Number(r.stream_ordering)])),
        onlyRoomNid: undefined,
      };
    }
    // As Synapse: a room the user is not joined to may be followed only when anyone may read it.
    const info = await rooms.roomInfo(roomId);
    if (info !== undefined) {
      const m = await membershipOf(db, info.nid, userId);
      const joinedFrom = new Map<number, number>();
      if (m?.membership === 'join') joinedFrom.set(info.nid, Number(m.stream_ordering));
      if (joinedFrom.size > 0 || (await rooms.roomRow(roomId))?.history_visibility === 'world_readable') {
        return { roomIds: [roomId], roomNids: new Set([info.nid]), joinedFrom, onlyRoomNid: info.nid };
      }
    }
    throw HearthError.forbidden('Non-joined access not allowed');
  }

  /** Everything for the user in (since, upTo]; `end` is where the next answer starts. */
  private async build(
    req: EventStreamRequest,
    scope: Scope,
    since: StreamPositions,
    upTo: StreamPositions,
    from: StreamPositions,
  ): Promise<{ chunk: JsonObject[]; end: Record<StreamName, number> }> {
    const { userId } = req;
    const chunk: JsonObject[] = [];
    // Account data first: it may hold a new ignore list, which the rest is read through.
    const changes = since.account_data < upTo.account_data ? await this.deps.accountData.accountDataSince(userId, since.account_data) : undefined;
    let ignored: Promise<ReadonlySet<string>> | undefined;
    const ignoredUsers = () => (ignored ??= this.ignored.of(userId, since.account_data, upTo.account_data, changes));
    // What /events does not deliver stays where the client's token had it, for a later /sync.
    const end: Record<StreamName, number> = { ...upTo, to_device: from.to_device, device_lists: from.device_lists };
    const joins: StoredEvent[] = [];

    if (since.events < upTo.events) {
      const read = await this.roomEvents(userId, scope, since.events, upTo.events, req.limit);
      end.events = read.end;
      const shown = await this.visible(userId, scope, read.events, ignoredUsers);
      const viewer = { userId, deviceId: req.deviceId };
      chunk.push(...((await this.deps.rooms.clientEvents(shown, { now: this.now(), viewer })) as unknown as JsonObject[]));
      for (const e of shown) if (e.type === MEMBER && memberEventMembership(e) === 'join') joins.push(e);
    }
    if (since.presence < upTo.presence) {
      const ignoring = await ignoredUsers();
      for (const p of await this.deps.presence.presenceSince(userId, since.presence)) if (!ignoring.has(p.sender)) chunk.push(presenceEvent(p));
    }
    if (since.typing < upTo.typing && scope.roomIds.length > 0) {
      for (const [roomId, userIds] of this.deps.typing.typingSince(scope.roomIds, since.typing)) {
        chunk.push({ type: 'm.typing', room_id: roomId, content: { user_ids: userIds } });
      }
    }
    if (since.receipts < upTo.receipts && scope.roomIds.length > 0) {
      for (const [roomId, contents] of await this.deps.receipts.receiptsSince(userId, scope.roomIds, since.receipts)) {
        for (const content of contents) chunk.push({ type: 'm.receipt', room_id: roomId, content: content as JsonObject });
      }
    }
    if (changes !== undefined) {
      for (const e of changes.global) chunk.push({ type: e.type, content: e.content });
      for (const [roomId, events] of changes.rooms) for (const e of events) chunk.push({ type: e.type, content: e.content, room_id: roomId });
    }
    // As Synapse: a join brings the presence of who joined, or, for the user's own join, of the room.
    if (joins.length > 0) chunk.push(...(await this.presenceOfJoins(userId, joins)));
    return { chunk, end };
  }

  /**
   * The events in (after, upTo] of the scope's rooms, and of rooms the user joined or left in that
   * range, with the member events about the user, oldest first, at most `limit`; `end` is the last
   * one's position when more are left, else `upTo`.
   */
  private async roomEvents(userId: string, scope: Scope, after: number, upTo: number, limit: number): Promise<{ events: StoredEvent[]; end: number }> {
    const aboutUser = (roomNid: number, type: string, stateKey: string | undefined) =>
      type === MEMBER && stateKey === userId && (scope.onlyRoomNid === undefined || roomNid === scope.onlyRoomNid);
    // A room the user was in for part of the range counts too (its events are checked one by one).
    const rooms = new Set(scope.roomNids);
    const addRoomsOf = (own: Iterable<StoredEvent>) => {
      for (const e of own) if (memberEventMembership(e) === 'join' || previousMembership(e) === 'join') rooms.add(e.roomNid);
    };
    // The range a woken request covers is, nearly always, in memory (the room reader's recent stretch).
    const window = await this.shared.window(after, upTo);
    let events: StoredEvent[];
    let more: boolean;
    if (window !== undefined) {
      const ownNids = window.filter((e) => aboutUser(e.roomNid, e.type, e.stateKey)).map((e) => e.eventNid);
      if (ownNids.length > 0) addRoomsOf((await this.shared.events(ownNids)).values());
      const picked = window.filter((e) => rooms.has(e.roomNid) || aboutUser(e.roomNid, e.type, e.stateKey));
      more = picked.length > limit;
      const taken = picked.slice(0, limit);
      const loaded = await this.shared.events(taken.map((e) => e.eventNid));
      events = taken.map((e) => loaded.get(e.eventNid)).filter((e): e is StoredEvent => e !== undefined);
    } else {
      const range = { after, upTo };
      const own = (await this.deps.rooms.membershipChanges(userId, range)).filter((e) => aboutUser(e.roomNid, e.type, e.stateKey));
      addRoomsOf(own);
      const inRooms = rooms.size === 0 ? [] : await this.deps.rooms.eventsOfRooms([...rooms], range, 'asc', limit + 1);
      const byNid = new Map<number, StoredEvent>();
      for (const e of [...inRooms, ...own]) byNid.set(e.nid, e);
      const merged = [...byNid.values()].sort(byStreamOrder);
      more = merged.length > limit;
      events = merged.slice(0, limit);
    }
    const last = events[events.length - 1];
    return { events, end: more && last !== undefined ? positionOf(last) : upTo };
  }

  /** The events the user may see (history visibility), without ignored users' messages. */
  private async visible(userId: string, scope: Scope, events: readonly StoredEvent[], ignoredUsers: () => Promise<ReadonlySet<string>>): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    // Where the user's membership changed in this range, the join position read before says nothing.
    const changed = new Set<number>();
    for (const e of events) if (e.type === MEMBER && e.stateKey === userId) changed.add(e.roomNid);
    const ownMembership = (e: StoredEvent) => e.type === MEMBER && e.stateKey === userId;
    const sinceJoin = new SinceJoin(this.deps.db);
    const joinedFrom = (e: StoredEvent) => (changed.has(e.roomNid) ? undefined : scope.joinedFrom.get(e.roomNid));
    await sinceJoin.confirm(events.map((e) => ({ visibleFrom: joinedFrom(e), e })));
    const needsCheck = (e: StoredEvent) => !ownMembership(e) && !sinceJoin.sure(joinedFrom(e), e);
    const history = new HistoryRecall(this.deps.db, userId);
    await history.prefetch(events.filter(needsCheck).map((e) => e.roomNid));
    const needIgnored = events.some((e) => e.stateKey === undefined && e.sender !== userId);
    const ignoring: ReadonlySet<string> = needIgnored ? await ignoredUsers() : new Set<string>();
    const out: StoredEvent[] = [];
    for (const e of events) {
      if (needsCheck(e) && !(await history.canSee(e.roomNid, e))) continue;
      if (e.stateKey === undefined && ignoring.has(e.sender)) continue;
      out.push(e);
    }
    return out;
  }

  private async presenceOfJoins(userId: string, joins: readonly StoredEvent[]): Promise<JsonObject[]> {
    const wanted = new Set<string>();
    for (const e of joins) {
      if (e.stateKey !== userId) wanted.add(e.stateKey!);
      else for (const m of await membersOfRoom(this.deps.db, e.roomNid, ['join'])) wanted.add(m.user_id);
    }
    if (wanted.size === 0) return [];
    const known = await this.deps.presence.presenceSince(userId, 0);
    return known.filter((p) => wanted.has(p.sender)).map(presenceEvent);
  }

  private wait(req: EventStreamRequest, scope: Scope, since: StreamPositions, timeoutMs: number): Promise<boolean> {
    return this.deps.notifier.wait({
      userId: req.userId,
      roomIds: scope.roomIds,
      since,
      timeoutMs,
      onCancel: (cancel) => {
        this.waits.add(cancel);
        const offClient = req.onClientGone?.(cancel);
        return () => {
          this.waits.delete(cancel);
          offClient?.();
        };
      },
    });
  }
}

/** m.presence as the legacy APIs give it: the user also in content.user_id, as Synapse writes it. */
export function presenceEvent(p: PresenceEvent): JsonObject {
  return { type: 'm.presence', sender: p.sender, content: { ...p.content, user_id: p.sender } };
}
