// The room server: the only writer of the room graph. It creates rooms, builds, signs, authorizes
// and stores events, and answers the client API's room queries. Operations live in perform/
// (writes) and query/ (reads); this class is their one entry point.

import { DEFAULT_ROOM_VERSION } from '../protocol/room-versions.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { computeEventId } from '../protocol/hashes.js';
import { HearthError } from '../protocol/errors.js';
import { serverNameOf } from '../protocol/ids/accessors.js';
import { parseRoomAlias } from '../protocol/ids/room-ids.js';
import type { Actor } from './actor.js';
import type { ClientEvent } from './client-event.js';
import { RoomCore, type MemberProfile, type RoomServiceDeps } from './core.js';
import { createAlias, removeAlias, resolveAlias, roomAliases } from './perform/aliases.js';
import { roomSummary, type RemoteHierarchy, type RoomSummary } from './query/summary.js';
import { eventRelations, roomThreads, type RelationsPage, type RelationsRequest, type ThreadsRequest } from './query/relations.js';
import { SpaceHierarchies, type HierarchyPage, type HierarchyRequest, type ServerHierarchy } from './query/hierarchy.js';
import { banUser, unbanUser } from './perform/ban.js';
import { createRoom, type CreateRoomRequest } from './perform/create.js';
import {
  directoryVisibility,
  listPublicRooms,
  setAppServiceDirectoryVisibility,
  setDirectoryVisibility,
  type DirectoryVisibility,
  type PublicRoomsRequest,
  type PublicRoomsResponse,
} from './perform/directory.js';
import { forgetRoom } from './perform/forget.js';
import { inviteUser } from './perform/invite.js';
import { joinRoom, type JoinOptions, type RemoteJoins } from './perform/join.js';
import { RemoteJoiner, type RemoteMembershipPort } from './perform/remote-join.js';
import { inviteFromServer, inviteRemoteUser, isOutOfBand, rejectOutOfBand, type InviteFromServer, type RemoteInvitePort } from './perform/remote-invite.js';
import { memberContent } from './perform/member-event.js';
import { parseUserId } from '../protocol/ids/user-id.js';
import type { KeyRing } from './input/key-ring.js';
import { backwardExtremities, joinedServers } from '../storage/rooms/graph.js';
import { kickUser } from './perform/kick.js';
import { refuseBlocked } from './perform/blocked.js';
import { knockRoom } from './perform/knock.js';
import { leaveRoom } from './perform/leave.js';
import { updateMemberProfiles } from './perform/profile.js';
import { redactEvent } from './perform/redact.js';
import {
  makeMembershipForServer,
  sendMembershipForServer,
  type MembershipTemplate,
  type RemoteMembership,
  type SendJoinResponse,
  type SendKnockResponse,
} from './perform/remote-membership.js';
import { sendMessageEvent, sendStateEvent } from './perform/send.js';
import { eventContext, roomEvent, type EventContext } from './query/events.js';
import { joinedMembers, joinedRooms, roomMembers, type JoinedMember, type MembersRequest } from './query/members.js';
import { ignoresNobody, roomMessages, type IgnoredUsersOf, type MessagesRequest, type MessagesResponse } from './query/messages.js';
import { roomState, roomStateEvent } from './query/state.js';
import { searchRoomEvents, type RoomEventsResults, type SearchIndexConfig } from './query/search.js';
import type { RoomEventsSearch } from '../protocol/search.js';
import type { RoomEventFilter } from '../protocol/filters.js';
import type { RoomReader } from './reader.js';
import { EventReceiver, type ReceiveOutcome } from './input/receive.js';
import { noRemoteEvents } from './input/remote-events.js';
import { StaticKeyRing } from './input/key-ring.js';
import { noneErased } from './erased-users.js';
import type { Pdu } from '../protocol/events.js';
import {
  backfillForServer,
  eventAuthForServer,
  eventForServer,
  missingEventsForServer,
  serverAclAllows,
  stateForServer,
  stateIdsForServer,
  type BackfillForServer,
  type EventAuthForServer,
  type MissingEventsForServer,
  type MissingEventsRequest,
  type ServingDeps,
  type StateForServer,
  type StateIdsForServer,
} from './query/for-servers.js';

export type { Actor } from './actor.js';
export type { RoomServiceDeps, ProfileSource, MemberProfile, AppServiceQueries } from './core.js';

export interface RoomStats {
  /** Rooms whose ordered queue has tasks running or waiting. */
  readonly busyRooms: number;
  /** Tasks running or waiting across the rooms' queues. */
  readonly queuedTasks: number;
  /** Write jobs waiting for the writer's next transaction. */
  readonly writerQueue: number;
  /** Events committed by this process since it started, by status. */
  readonly persisted: Readonly<Record<string, number>>;
  /** Lookups that found what they asked for in memory, and that did not, by cache. */
  readonly caches: Readonly<Record<string, { readonly hits: number; readonly misses: number }>>;
}
export type { IgnoredUsersOf } from './query/messages.js';
export type { MembershipTemplate, RemoteMembership, SendJoinResponse, SendKnockResponse } from './perform/remote-membership.js';
export type { BackfillForServer, EventAuthForServer, MissingEventsForServer, MissingEventsRequest, StateForServer, StateIdsForServer } from './query/for-servers.js';

/** Events of history fetched when joining a room through another server: a sync's worth. */
const RECENT_HISTORY_ON_JOIN = 20;

export class RoomService {
  private readonly core: RoomCore;
  private readonly remoteHierarchy: RemoteHierarchy | undefined;
  private readonly hierarchies: SpaceHierarchies;
  private readonly defaultRoomVersion: string;
  private readonly ignoredUsers: IgnoredUsersOf;
  private readonly receiver: EventReceiver;
  private readonly serving: ServingDeps;

  /** Another server's alias, asked of that server (federation); undefined: unknown there. */
  private readonly remoteAlias: ((alias: string) => Promise<{ room_id: string; servers: string[] } | undefined>) | undefined;

  private readonly keyRing: KeyRing;
  private readonly remoteMembership: (RemoteMembershipPort & RemoteInvitePort) | undefined;
  /** History this server lacks is asked of other servers (federation). */
  private readonly backfills: boolean;
  /** Joins through other servers; undefined without federation. */
  private readonly joiner: RemoteJoiner | undefined;

  /** `ignoredUsers`: whose messages each user's reads leave out (default: nobody's). */
  constructor(
    deps: RoomServiceDeps & {
      readonly ignoredUsers?: IgnoredUsersOf;
      readonly remoteAlias?: (alias: string) => Promise<{ room_id: string; servers: string[] } | undefined>;
      /** Joins, leaves and invites asked of other servers (federation). */
      readonly remoteMembership?: RemoteMembershipPort & RemoteInvitePort;
      /** Paging back past the history this server has backfills through `remoteEvents` (federation). */
      readonly backfillWhenPaging?: boolean;
      /** Where long operations tell their progress (the joins of big rooms). */
      readonly log?: { info(message: string, details?: object): void };
      /** Rooms this server is not in, asked of other servers for summaries and hierarchies (federation). */
      readonly remoteHierarchy?: RemoteHierarchy;
    },
  ) {
    this.core = new RoomCore(deps);
    this.remoteHierarchy = deps.remoteHierarchy;
    this.hierarchies = new SpaceHierarchies(this.core, deps.remoteHierarchy);
    this.keyRing = deps.keyRing ?? new StaticKeyRing();
    this.remoteMembership = deps.remoteMembership;
    this.backfills = deps.backfillWhenPaging === true && deps.remoteEvents !== undefined;
    const recentHistory = (server: string, roomId: string) => this.receiver.backfillFrom(server, roomId, RECENT_HISTORY_ON_JOIN);
    this.joiner = deps.remoteMembership === undefined ? undefined : new RemoteJoiner(this.core, this.keyRing, deps.remoteMembership, deps.log, recentHistory);
    this.remoteAlias = deps.remoteAlias;
    this.defaultRoomVersion = deps.defaultRoomVersion ?? DEFAULT_ROOM_VERSION;
    this.ignoredUsers = deps.ignoredUsers ?? ignoresNobody;
    this.receiver = new EventReceiver(this.core, { keyRing: this.keyRing, remote: deps.remoteEvents ?? noRemoteEvents });
    this.serving = { core: this.core, erased: deps.erasedUsers ?? noneErased };
  }

  /** Receives PDUs another server sent (checked, decided and stored); each one's outcome in order. */
  receive(origin: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]> {
    return this.receiver.receive(origin, pdus);
  }

  /**
   * Stores history another server returned for a backfill of the room (events older than its
   * backward extremities): checked like received events but never soft-failed, on negative
   * positions, never news to a sync, the forward extremities and current state untouched.
   */
  backfill(origin: string, roomId: string, pdus: readonly unknown[]): Promise<ReceiveOutcome[]> {
    return this.receiver.backfill(origin, roomId, pdus);
  }

  /**
   * Fills history before the room's backward extremities from `origin` (like GET /backfill), at
   * most `limit` events; each one's outcome (none when the room has no gap).
   */
  backfillFrom(origin: string, roomId: string, limit: number): Promise<ReceiveOutcome[]> {
    return this.receiver.backfillFrom(origin, roomId, limit);
  }

  /** Read access to rooms and events (what sync builds on). */
  get reader(): RoomReader {
    return this.core.reader;
  }

  /** Counts for metrics, read when scraped. */
  get stats(): RoomStats {
    const { queue, reader } = this.core;
    return {
      busyRooms: queue.busyRooms,
      queuedTasks: queue.pendingTasks,
      writerQueue: this.core.writerQueue,
      persisted: this.core.persisted,
      caches: reader.cacheLookups,
    };
  }

  // ---- rooms and membership ----

  createRoom(actor: Actor, request: CreateRoomRequest): Promise<{ roomId: string }> {
    return createRoom(this.core, actor, request, this.defaultRoomVersion);
  }

  /** Joins a room here, or through another server when this one is not in it (with federation). */
  join(actor: Actor, roomIdOrAlias: string, options: JoinOptions = {}): Promise<{ roomId: string }> {
    return joinRoom(this.core, actor, roomIdOrAlias, options, this.remoteJoins());
  }

  private remoteJoins(): RemoteJoins | undefined {
    return this.joiner === undefined ? undefined : { joiner: this.joiner, resolveAlias: (alias: string) => this.resolveAlias(alias) };
  }

  /** Leaves a room; an invite to a room this server is not in is rejected through the inviter's server. */
  async leave(actor: Actor, roomId: string, options: { reason?: string } = {}): Promise<void> {
    const head = this.remoteMembership === undefined ? undefined : await this.core.findHead(roomId);
    if (head !== undefined && isOutOfBand(head)) {
      const content: JsonObject = options.reason === undefined ? {} : { reason: options.reason };
      return rejectOutOfBand(this.core, this.keyRing, this.remoteMembership!, roomId, actor.userId, content);
    }
    return leaveRoom(this.core, actor, roomId, options);
  }

  /** Invites a user; another server's user is invited through their server (with federation). */
  async invite(actor: Actor, roomId: string, userId: string, options: { reason?: string; isDirect?: boolean } = {}): Promise<void> {
    const target = parseUserId(userId);
    await refuseBlocked(this.core, roomId);
    if (this.remoteMembership === undefined || serverNameOf(target) === this.core.serverName) return inviteUser(this.core, actor, roomId, userId, options);
    const content = await memberContent(this.core, target, 'invite', options);
    return inviteRemoteUser(this.core, this.remoteMembership, (origin, pdus) => this.receive(origin, pdus), roomId, actor.userId, target, content);
  }

  /** PUT /invite from another server: the invite, checked, countersigned and stored. */
  async inviteFromServer(origin: string, roomId: string, eventId: string, body: InviteFromServer): Promise<Pdu> {
    await refuseBlocked(this.core, roomId);
    return inviteFromServer(this.core, this.keyRing, (o, pdus) => this.receive(o, pdus), origin, roomId, eventId, body);
  }

  kick(actor: Actor, roomId: string, userId: string, options: { reason?: string } = {}): Promise<void> {
    return kickUser(this.core, actor, roomId, userId, options);
  }

  ban(actor: Actor, roomId: string, userId: string, options: { reason?: string } = {}): Promise<void> {
    return banUser(this.core, actor, roomId, userId, options);
  }

  unban(actor: Actor, roomId: string, userId: string, options: { reason?: string } = {}): Promise<void> {
    return unbanUser(this.core, actor, roomId, userId, options);
  }

  /** Knocks on a room, through another server when this one is not in it (with federation). */
  knock(actor: Actor, roomIdOrAlias: string, options: { reason?: string; via?: readonly string[] } = {}): Promise<{ roomId: string }> {
    return knockRoom(this.core, actor, roomIdOrAlias, options, this.remoteJoins());
  }

  /** Removes the room's every row (admin purge); whether it was known. */
  purgeRoom(roomId: string): Promise<boolean> {
    return this.core.purgeRoom(roomId);
  }

  forget(actor: Actor, roomId: string): Promise<void> {
    return forgetRoom(this.core, actor, roomId);
  }

  // ---- events ----

  /** Sends a message event; with `txnId`, the same device and txnId give the same event id. */
  sendMessage(actor: Actor, roomId: string, type: string, content: JsonObject, txnId?: string): Promise<string> {
    return sendMessageEvent(this.core, actor, roomId, type, content, txnId);
  }

  sendState(actor: Actor, roomId: string, type: string, stateKey: string, content: JsonObject): Promise<string> {
    return sendStateEvent(this.core, actor, roomId, type, stateKey, content);
  }

  redact(actor: Actor, roomId: string, eventId: string, options: { reason?: string; txnId?: string } = {}): Promise<string> {
    return redactEvent(this.core, actor, roomId, eventId, options);
  }

  /** A profile change reaches the member events of the user's joined rooms. */
  updateMemberProfiles(userId: string, profile: MemberProfile): Promise<string[]> {
    return updateMemberProfiles(this.core, userId, profile);
  }

  // ---- reads ----

  getEvent(actor: Actor, roomId: string, eventId: string): Promise<ClientEvent> {
    return roomEvent(this.core, actor, roomId, eventId, this.ignoredUsers);
  }

  /** The events relating to one the user may see (GET /relations). */
  relations(actor: Actor, roomId: string, eventId: string, request: RelationsRequest): Promise<RelationsPage> {
    return eventRelations(this.core, actor, roomId, eventId, request, this.ignoredUsers);
  }

  /** A room's threads, newest activity first (GET /threads). */
  threads(actor: Actor, roomId: string, request: ThreadsRequest): Promise<{ chunk: ClientEvent[]; next_batch?: string }> {
    return roomThreads(this.core, actor, roomId, request, this.ignoredUsers);
  }

  context(actor: Actor, roomId: string, eventId: string, options: { limit: number; filter?: RoomEventFilter }): Promise<EventContext> {
    return eventContext(this.core, actor, roomId, eventId, options, this.ignoredUsers);
  }

  /** A room_events search over the rooms the user is or was in, as they may see them. */
  search(actor: Actor, index: SearchIndexConfig, request: RoomEventsSearch, nextBatch: string | undefined): Promise<RoomEventsResults> {
    return searchRoomEvents(this.core, index, actor, request, nextBatch, this.ignoredUsers);
  }

  /**
   * A page of the room's timeline. Paging back past the oldest event this server has, in a room
   * with history it lacks (a room joined through another server), first backfills from the
   * room's other servers.
   */
  async messages(actor: Actor, roomId: string, request: MessagesRequest): Promise<MessagesResponse> {
    const page = await roomMessages(this.core, actor, roomId, request, this.ignoredUsers);
    if (request.dir !== 'b' || page.chunk.length >= request.limit || !this.backfills) return page;
    if (!(await this.backfillFromRoomServers(roomId, request.limit))) return page;
    return roomMessages(this.core, actor, roomId, request, this.ignoredUsers);
  }

  /**
   * Fills the room's history gap from the first of its other servers (at most three asked) that
   * gives events; whether any were taken.
   */
  private async backfillFromRoomServers(roomId: string, limit: number): Promise<boolean> {
    const head = await this.core.findHead(roomId);
    if (head?.roomNid === undefined || (await backwardExtremities(this.core.db, head.roomNid)).length === 0) return false;
    const servers = (await joinedServers(this.core.db, head.roomNid)).filter((s) => s !== this.core.serverName);
    for (const server of servers.slice(0, 3)) {
      const outcomes = await this.receiver.backfillFrom(server, roomId, Math.max(limit, 20));
      if (outcomes.some((o) => o.status === 'timeline')) return true;
    }
    return false;
  }

  state(actor: Actor, roomId: string): Promise<ClientEvent[]> {
    return roomState(this.core, actor, roomId);
  }

  stateEvent(actor: Actor, roomId: string, type: string, stateKey: string, format: 'content' | 'event' = 'content'): Promise<JsonObject | ClientEvent> {
    return roomStateEvent(this.core, actor, roomId, type, stateKey, format);
  }

  members(actor: Actor, roomId: string, request: MembersRequest = {}): Promise<ClientEvent[]> {
    return roomMembers(this.core, actor, roomId, request);
  }

  joinedMembers(actor: Actor, roomId: string): Promise<Record<string, JoinedMember>> {
    return joinedMembers(this.core, actor, roomId);
  }

  joinedRooms(userId: string): Promise<string[]> {
    return joinedRooms(this.core, userId);
  }

  // ---- serving other servers (origin: the requesting server's name, authenticated by federation) ----

  /** GET /event: the PDU, pruned when `origin` may not see it; 404 unknown, 403 origin not in the room or denied by its ACL. */
  eventForServer(origin: string, eventId: string): Promise<Pdu> {
    return eventForServer(this.serving, origin, eventId);
  }

  /** GET /state_ids: the state before the event and its auth chain, as ids. */
  stateIdsForServer(origin: string, roomId: string, eventId: string): Promise<StateIdsForServer> {
    return stateIdsForServer(this.serving, origin, roomId, eventId);
  }

  /** GET /state: the state before the event and its auth chain, as PDUs. */
  stateForServer(origin: string, roomId: string, eventId: string): Promise<StateForServer> {
    return stateForServer(this.serving, origin, roomId, eventId);
  }

  /** GET /event_auth: the event's full auth chain. */
  eventAuthForServer(origin: string, roomId: string, eventId: string): Promise<EventAuthForServer> {
    return eventAuthForServer(this.serving, origin, roomId, eventId);
  }

  /** GET /backfill: the given events and those before them, at most `limit` (≤ 100), deepest first. */
  backfillForServer(origin: string, roomId: string, fromEventIds: readonly string[], limit: number): Promise<BackfillForServer> {
    return backfillForServer(this.serving, origin, roomId, fromEventIds, limit);
  }

  /** POST /get_missing_events: the events before `latest_events` back to `earliest_events`, oldest first. */
  missingEventsForServer(origin: string, roomId: string, request: MissingEventsRequest): Promise<MissingEventsForServer> {
    return missingEventsForServer(this.serving, origin, roomId, request);
  }

  /**
   * GET /make_join, /make_leave, /make_knock: a template member event for `userId` (a user of `origin`),
   * neither hashed nor signed, that the auth rules allow now. `supportedVersions`: the origin's
   * room versions (`ver`; default ['1']), checked for joins and knocks.
   */
  makeMembershipForServer(
    origin: string,
    roomId: string,
    userId: string,
    membership: RemoteMembership,
    supportedVersions: readonly string[] | undefined,
  ): Promise<MembershipTemplate> {
    return makeMembershipForServer(this.core, origin, roomId, userId, membership, supportedVersions);
  }

  /**
   * PUT /send_join, /send_leave, /send_knock: the member event `origin` signed, received like any
   * PDU; a join is answered with the state before it and its auth chain, a knock with the room's
   * stripped state, a leave with {}.
   */
  sendMembershipForServer(origin: string, roomId: string, eventId: string, pdu: unknown, membership: 'join'): Promise<SendJoinResponse>;
  sendMembershipForServer(origin: string, roomId: string, eventId: string, pdu: unknown, membership: 'leave'): Promise<Record<string, never>>;
  sendMembershipForServer(origin: string, roomId: string, eventId: string, pdu: unknown, membership: 'knock'): Promise<SendKnockResponse>;
  sendMembershipForServer(origin: string, roomId: string, eventId: string, pdu: unknown, membership: RemoteMembership): Promise<SendJoinResponse | SendKnockResponse | Record<string, never>>;
  sendMembershipForServer(origin: string, roomId: string, eventId: string, pdu: unknown, membership: RemoteMembership): Promise<SendJoinResponse | SendKnockResponse | Record<string, never>> {
    const deps = { core: this.core, serving: this.serving, receive: (o: string, pdus: readonly unknown[]) => this.receive(o, pdus) };
    return sendMembershipForServer(deps, origin, roomId, eventId, pdu, membership);
  }

  /** Whether the room's server ACL lets `origin` take part (PDUs and EDUs it sends for the room). */
  serverAclAllows(origin: string, roomId: string): Promise<boolean> {
    return serverAclAllows(this.core, origin, roomId);
  }

  /** The id of a PDU received for a room this server has (undefined: unknown room, or no id can be computed). */
  async receivedEventId(pdu: unknown): Promise<string | undefined> {
    if (!isJsonObject(pdu) || typeof pdu['room_id'] !== 'string') return undefined;
    const room = await this.core.reader.roomInfo(pdu['room_id']);
    if (room === undefined) return undefined;
    try {
      return computeEventId(pdu, room.version);
    } catch {
      return undefined;
    }
  }

  /** A page of the space tree below `roomId`, as `actor` may see it. */
  hierarchy(actor: Actor, roomId: string, request: HierarchyRequest): Promise<HierarchyPage> {
    return this.hierarchies.page(actor.userId, roomId, request);
  }

  /** The federation /hierarchy answer for `origin`. */
  async hierarchyForServer(origin: string, roomId: string, suggestedOnly: boolean): Promise<ServerHierarchy> {
    if (!(await this.serverAclAllows(origin, roomId))) throw HearthError.forbidden('Server is banned from this room');
    return this.hierarchies.forServer(origin, roomId, suggestedOnly);
  }

  /**
   * A room's summary (by id or alias) for `userId`, or for a request without a token; a room this
   * server is not in is asked of `via` (or of the servers another server's alias names).
   */
  async roomSummary(roomIdOrAlias: string, userId: string | undefined, via: readonly string[] = []): Promise<RoomSummary> {
    let roomId = roomIdOrAlias;
    let servers = via;
    if (roomIdOrAlias.startsWith('#')) {
      const resolved = await this.resolveAlias(roomIdOrAlias);
      roomId = resolved.room_id;
      if (servers.length === 0) servers = resolved.servers.filter((s) => s !== this.core.serverName);
    } else if (!roomIdOrAlias.startsWith('!')) throw HearthError.invalidParam(`${roomIdOrAlias} is neither a room id nor an alias`);
    return roomSummary(this.core, this.remoteHierarchy, roomId, userId, servers);
  }

  // ---- aliases and directory ----

  createAlias(actor: Actor, alias: string, roomId: string): Promise<void> {
    return createAlias(this.core, actor, alias, roomId);
  }

  /** A local alias from the database; another server's asked of that server (when federation is on). */
  async resolveAlias(alias: string): Promise<{ room_id: string; servers: string[] }> {
    const remote = this.remoteAlias;
    if (remote !== undefined && serverNameOf(parseRoomAlias(alias)) !== this.core.serverName) {
      const found = await remote(alias);
      if (found === undefined) throw HearthError.notFound(`Room alias ${alias} not found`);
      return found;
    }
    return resolveAlias(this.core, alias);
  }

  deleteAlias(actor: Actor, alias: string): Promise<void> {
    return removeAlias(this.core, actor, alias);
  }

  roomAliases(actor: Actor, roomId: string): Promise<string[]> {
    return roomAliases(this.core, actor, roomId);
  }

  directoryVisibility(roomId: string): Promise<DirectoryVisibility> {
    return directoryVisibility(this.core, roomId);
  }

  setDirectoryVisibility(actor: Actor, roomId: string, visibility: DirectoryVisibility): Promise<void> {
    return setDirectoryVisibility(this.core, actor, roomId, visibility);
  }

  setAppServiceDirectoryVisibility(asId: string, networkId: string, roomId: string, visibility: DirectoryVisibility): Promise<void> {
    return setAppServiceDirectoryVisibility(this.core, asId, networkId, roomId, visibility);
  }

  publicRooms(request: PublicRoomsRequest): Promise<PublicRoomsResponse> {
    return listPublicRooms(this.core, request);
  }
}
