// GET /initialSync and GET /rooms/{roomId}/initialSync (client API, deprecated since r0, still
// used by bridges and tools): a snapshot of the user's rooms, or of one room, in the legacy shape.
// Each room has its latest messages as the user may see them ({chunk, start, end}), its state
// (current, or as it was when the user left), its directory visibility and the user's account
// data for it; the answer's `end` is a token for GET /events (and /sync).
//
// Built from the sync blocks: the timelines of every room in one batched read (sync/timeline.ts),
// the state snapshots of every room in one more (storage/sync/snapshots.ts).

import type { Kysely } from 'kysely';
import { compileFilter } from '../protocol/filters.js';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import { byStreamOrder, type StoredEvent } from '../rooms/stored-event.js';
import { membershipOf } from '../storage/rooms/memberships.js';
import { roomsByIds } from '../storage/rooms/rooms.js';
import type { Schema } from '../storage/schema.js';
import { readSnapshots } from '../storage/sync/snapshots.js';
import type { AccountDataChanges } from '../users/account-data.js';
import type { PresenceEvent } from '../users/presence.js';
import { presenceEvent } from './event-stream.js';
import type { Notifier } from './notifier.js';
import type { SyncPass } from './pass.js';
import { previousMembership } from './room-plans.js';
import { SharedReads } from './shared-reads.js';
import { loadTimelines, statesAtEnd, type TimelineRequest } from './timeline.js';
import { encodeSyncToken, type StreamName } from './token.js';

/** Rooms read and formatted together. */
const ROOMS_PER_BATCH = 50;

export interface InitialSyncDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: Notifier;
  readonly rooms: RoomReader;
  readonly typing: { currentPosition(): number };
  readonly receipts: { receiptsSince(viewerId: string, roomIds: Iterable<string>, afterPosition: number): Promise<Map<string, object[]>> };
  readonly presence: { presenceSince(userId: string, afterPosition: number): Promise<PresenceEvent[]> };
  readonly accountData: {
    accountDataSince(userId: string, afterPosition: number, options?: { initial?: boolean }): Promise<AccountDataChanges>;
    ignoredUsers(userId: string): Promise<Set<string>>;
  };
  readonly now?: () => number;
}

export interface InitialSyncUser {
  readonly userId: string;
  readonly deviceId: string | null;
}

/** One room of a snapshot: its messages run up to `end` (the user's leave, or now). */
interface RoomPlan {
  readonly roomId: string;
  readonly roomNid: number;
  /** The user's membership; undefined when peeking into a world-readable room. */
  readonly membership: string | undefined;
  readonly end: number;
  /** Events from here on are visible without a history check (the user's join). */
  readonly visibleFrom: number | undefined;
  /** No state: a room left without ever being joined (a rejected invite, a withdrawn knock). */
  readonly stateless: boolean;
}

interface RoomContent {
  readonly messages: { chunk: JsonObject[]; start: string; end: string };
  readonly state: JsonObject[];
}

/** Whether the member event ended a join (else the user never was in: no state for them). */
function endedJoin(e: StoredEvent | undefined): boolean {
  return e !== undefined && previousMembership(e) === 'join';
}

export class LegacyInitialSync {
  private readonly now: () => number;
  private readonly shared: SharedReads;

  constructor(private readonly deps: InitialSyncDeps) {
    this.now = deps.now ?? Date.now;
    this.shared = new SharedReads(deps.db, deps.rooms);
  }

  /** GET /initialSync: joined and invited rooms (and, with `archived`, those left or banned from). */
  async initialSync(user: InitialSyncUser, options: { limit: number; archived: boolean }): Promise<JsonObject> {
    const { rooms: reader, db } = this.deps;
    const { userId } = user;
    const upTo = this.currentPositions();
    const wanted = options.archived ? ['join', 'invite', 'leave', 'ban'] : ['join', 'invite'];
    const rows = (await reader.roomsOfUser(userId, wanted)).filter((r) => r.forgotten === 0);
    // A membership committed after the positions were read: the snapshot reaches it.
    for (const r of rows) upTo.events = Math.max(upTo.events, Number(r.stream_ordering));
    const ignored = await this.deps.accountData.ignoredUsers(userId);
    const memberEvents = await reader.eventsByNids(rows.filter((r) => r.membership !== 'join').map((r) => Number(r.event_nid)));

    const plans: RoomPlan[] = [];
    for (const r of rows) {
      if (r.membership === 'invite') continue;
      const joined = r.membership === 'join';
      const position = Number(r.stream_ordering);
      plans.push({
        roomId: r.room_id,
        roomNid: Number(r.room_nid),
        membership: r.membership,
        end: joined ? upTo.events : position,
        visibleFrom: joined ? position : undefined,
        stateless: !joined && !endedJoin(memberEvents.get(Number(r.event_nid))),
      });
    }
    const contents = await this.contents(user, plans, upTo, options.limit, ignored);
    const published = new Map((await roomsByIds(db, rows.map((r) => r.room_id))).map((row) => [row.room_id, row.is_public !== 0]));
    const accountData = await this.deps.accountData.accountDataSince(userId, 0, { initial: true });
    const joinedIds = rows.filter((r) => r.membership === 'join').map((r) => r.room_id);
    const receipts = joinedIds.length === 0 ? new Map<string, object[]>() : await this.deps.receipts.receiptsSince(userId, joinedIds, 0);

    const now = this.now();
    const out: JsonObject[] = [];
    for (const r of rows) {
      const room: JsonObject = {
        room_id: r.room_id,
        membership: r.membership,
        visibility: published.get(r.room_id) === true ? 'public' : 'private',
      };
      if (r.membership === 'invite') {
        const invite = memberEvents.get(Number(r.event_nid));
        // Invites from ignored users are not shown (client API, "Ignoring users").
        if (invite === undefined || ignored.has(invite.sender)) continue;
        room['inviter'] = invite.sender;
        room['invite'] = (await reader.clientEvents([invite], { now, viewer: user }))[0] as unknown as JsonObject;
      } else {
        const content = contents.get(r.room_id)!;
        room['messages'] = content.messages;
        room['state'] = content.state;
        room['account_data'] = accountDataOf(accountData, r.room_id);
      }
      out.push(room);
    }
    return {
      end: encodeSyncToken(upTo),
      rooms: out,
      presence: (await this.deps.presence.presenceSince(userId, 0))
        .filter((p) => p.content.presence !== 'offline' && !ignored.has(p.sender))
        .map(presenceEvent),
      account_data: accountData.global.map((e) => ({ type: e.type, content: e.content })),
      // Not in the spec, but Synapse gives them: the read receipts of the joined rooms.
      receipts: [...receipts].flatMap(([roomId, list]) => list.map((content) => ({ type: 'm.receipt', room_id: roomId, content: content as JsonObject }))),
    };
  }

  /**
   * GET /rooms/{roomId}/initialSync: the room now for a member, as it was when they left for a
   * former member, and now (without `membership`) for anyone when the room is world-readable.
   */
  async roomInitialSync(user: InitialSyncUser, roomId: string, options: { limit: number }): Promise<JsonObject> {
    const { rooms: reader, db } = this.deps;
    const { userId } = user;
    const info = await reader.roomInfo(roomId);
    const row = info === undefined ? undefined : await reader.roomRow(roomId);
    if (info === undefined || row === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
    const upTo = this.currentPositions();
    const m = await membershipOf(db, info.nid, userId);
    const membership = m === undefined || m.forgotten !== 0 ? undefined : m.membership;
    const position = m === undefined ? 0 : Number(m.stream_ordering);
    let plan: RoomPlan;
    if (membership === 'join') {
      upTo.events = Math.max(upTo.events, position);
      plan = { roomId, roomNid: info.nid, membership, end: upTo.events, visibleFrom: position, stateless: false };
    } else if (membership === 'leave' || membership === 'ban') {
      const leave = (await reader.eventsByNids([Number(m!.event_nid)])).get(Number(m!.event_nid));
      plan = { roomId, roomNid: info.nid, membership, end: position, visibleFrom: undefined, stateless: !endedJoin(leave) };
    } else if (row.history_visibility === 'world_readable') {
      plan = { roomId, roomNid: info.nid, membership: undefined, end: upTo.events, visibleFrom: undefined, stateless: false };
    } else {
      throw HearthError.forbidden(`User ${userId} is not in room ${roomId}, and the room is not world_readable`);
    }
    const ignored = await this.deps.accountData.ignoredUsers(userId);
    const content = (await this.contents(user, [plan], upTo, options.limit, ignored)).get(roomId)!;
    // A former member gets the room as they left it: no presence or receipts of now.
    const current = plan.membership !== 'leave' && plan.membership !== 'ban';
    const out: JsonObject = { room_id: roomId };
    if (plan.membership !== undefined) out['membership'] = plan.membership;
    out['messages'] = content.messages;
    out['state'] = content.state;
    out['presence'] = current ? await this.presenceOfMembers(userId, content.state, ignored) : [];
    out['receipts'] = current
      ? [...(await this.deps.receipts.receiptsSince(userId, [roomId], 0))].flatMap(([id, list]) =>
          list.map((c) => ({ type: 'm.receipt', room_id: id, content: c as JsonObject })),
        )
      : [];
    out['visibility'] = row.is_public !== 0 ? 'public' : 'private';
    out['account_data'] = accountDataOf(await this.deps.accountData.accountDataSince(userId, 0), roomId);
    return out;
  }

  private currentPositions(): Record<StreamName, number> {
    const positions = this.deps.notifier.current();
    return { ...positions, typing: Math.max(positions.typing, this.deps.typing.currentPosition()) };
  }

  /** Messages and state of each room, read in batches of rooms. */
  private async contents(
    user: InitialSyncUser,
    plans: readonly RoomPlan[],
    upTo: Record<StreamName, number>,
    limit: number,
    ignored: ReadonlySet<string>,
  ): Promise<Map<string, RoomContent>> {
    const out = new Map<string, RoomContent>();
    // What one batch reads is garbage before the next starts, as in an initial sync.
    for (let i = 0; i < plans.length; i += ROOMS_PER_BATCH) {
      await this.contentsOf(user, plans.slice(i, i + ROOMS_PER_BATCH), upTo, limit, ignored, out);
    }
    return out;
  }

  private async contentsOf(
    user: InitialSyncUser,
    plans: readonly RoomPlan[],
    upTo: Record<StreamName, number>,
    limit: number,
    ignored: ReadonlySet<string>,
    out: Map<string, RoomContent>,
  ): Promise<void> {
    const { db, rooms: reader } = this.deps;
    const pass: SyncPass = {
      userId: user.userId,
      deviceId: user.deviceId,
      filter: compileFilter({ room: { timeline: { limit } } }),
      since: undefined,
      upTo,
      fullState: true,
      now: this.now(),
      ignored: () => Promise.resolve(ignored),
      window: () => Promise.resolve(undefined),
    };
    const requests: TimelineRequest[] = plans.map((p) => ({ roomId: p.roomId, roomNid: p.roomNid, range: { upTo: p.end }, visibleFrom: p.visibleFrom }));
    const timelines = await loadTimelines(db, reader, this.shared, pass, requests);

    // The state at each room's end: after the last event read, or (none read) the last one before it.
    const stated = plans.filter((p) => !p.stateless);
    const bare = stated.filter((p) => timelines.get(p.roomId)!.stateAtEnd === undefined);
    const ends = await statesAtEnd(db, reader, bare.map((p) => ({ roomNid: p.roomNid, upTo: p.end })));
    const snapshotOf = new Map<string, number>();
    for (const p of stated) {
      const nid = timelines.get(p.roomId)!.stateAtEnd ?? ends.get(p.roomNid);
      if (nid !== undefined) snapshotOf.set(p.roomId, nid);
    }
    const snapshots = await readSnapshots(db, [...snapshotOf.values()]);
    const stateNids = new Map<string, number[]>();
    for (const [roomId, nid] of snapshotOf) stateNids.set(roomId, [...(snapshots.get(nid)?.values() ?? [])]);
    const events = await reader.eventsByNids([...stateNids.values()].flat());

    const options = { now: pass.now, viewer: user };
    for (const p of plans) {
      const timeline = timelines.get(p.roomId)!;
      const state = (stateNids.get(p.roomId) ?? [])
        .map((nid) => events.get(nid))
        .filter((e): e is StoredEvent => e !== undefined)
        .sort(byStreamOrder);
      out.set(p.roomId, {
        messages: {
          chunk: (await reader.clientEvents(timeline.events, options)) as unknown as JsonObject[],
          start: timeline.prevBatch,
          end: encodeSyncToken({ ...upTo, events: p.end }),
        },
        state: (await reader.clientEvents(state, options)) as unknown as JsonObject[],
      });
    }
  }

  /** Presence of the room's joined members (from its state) that the user may see. */
  private async presenceOfMembers(userId: string, state: readonly JsonObject[], ignored: ReadonlySet<string>): Promise<JsonObject[]> {
    const members = new Set<string>();
    for (const e of state) {
      const content = e['content'];
      if (e['type'] === 'm.room.member' && isJsonObject(content) && content['membership'] === 'join') members.add(e['state_key'] as string);
    }
    return (await this.deps.presence.presenceSince(userId, 0)).filter((p) => members.has(p.sender) && !ignored.has(p.sender)).map(presenceEvent);
  }
}

function accountDataOf(changes: AccountDataChanges, roomId: string): JsonObject[] {
  return (changes.rooms.get(roomId) ?? []).map((e) => ({ type: e.type, content: e.content }));
}
