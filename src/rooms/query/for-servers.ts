// Serving a room's events to other servers (server-server API, "Retrieving events", "Backfilling
// and retrieving missing events"): GET /event, /state, /state_ids, /event_auth, /backfill and
// POST /get_missing_events, without the HTTP. The answers have the shapes the receiving side
// (rooms/input/remote-events.ts) reads.
//
// Who may ask, as the reference server (Synapse) decides:
// - the room must be known here (else 404 M_NOT_FOUND);
// - the origin must be in the room: some user of it joined in the current state; for /backfill
//   and /get_missing_events, joined in the state after one of the events it names also counts
//   (else 403 M_FORBIDDEN). This is checked before the ACL, so that the ACL's contents stay hidden
//   from servers outside the room;
// - the room's server ACL (current state) must allow the origin (else 403 M_FORBIDDEN).
//
// What is served: PDUs as stored, without `unsigned`; a redacted event in its redacted form.
// Rejected events never (404 when asked for by id); outliers only by id and in state and auth
// chains (their state is not known, so walks over the timeline do not enter them); soft-failed
// events by id and where a walk reaches them (the spec's note under "Soft failure").
// /event, /backfill and /get_missing_events apply history visibility for servers per event: an
// event the origin may not see is served pruned (redacted), as the reference server does; state
// and auth chains are served whole.

import type { Kysely } from 'kysely';
import { HearthError } from '../../protocol/errors.js';
import type { Pdu } from '../../protocol/events.js';
import { isJsonObject } from '../../protocol/json.js';
import { redactEvent } from '../../protocol/redaction.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import { parseServerAcl, serverAllowedByAcl } from '../../protocol/server-acl.js';
import { authChainIds } from '../../storage/rooms/graph.js';
import {
  contentsByNids,
  graphNodesByIds,
  prevNodesOf,
  serverJoinedNow,
  serverStateInSnapshots,
  type GraphNode,
} from '../../storage/rooms/for-servers.js';
import { readSnapshotStates } from '../../storage/rooms/state-snapshots.js';
import type { Schema } from '../../storage/schema.js';
import type { RoomCore } from '../core.js';
import type { ErasedSenders } from '../erased-users.js';
import type { RoomInfo } from '../reader.js';
import type { StoredEvent } from '../stored-event.js';
import { historyVisibilityOf, type HistoryVisibility } from '../visibility.js';

/** GET /state_ids: the state before the event and its auth chain, as ids. */
export interface StateIdsForServer {
  pdu_ids: string[];
  auth_chain_ids: string[];
}

/** GET /state: the state before the event and its auth chain, as PDUs. */
export interface StateForServer {
  pdus: Pdu[];
  auth_chain: Pdu[];
}

/** GET /event_auth: the event's auth chain. */
export interface EventAuthForServer {
  auth_chain: Pdu[];
}

/** GET /backfill: a transaction of PDUs, newest (deepest) first. */
export interface BackfillForServer {
  origin: string;
  origin_server_ts: number;
  pdus: Pdu[];
}

/** POST /get_missing_events's body. */
export interface MissingEventsRequest {
  readonly earliest_events: readonly string[];
  readonly latest_events: readonly string[];
  /** Default 10, at most MISSING_EVENTS_LIMIT. */
  readonly limit?: number;
  /** Events shallower than this are neither returned nor walked through (default 0). */
  readonly min_depth?: number;
}

export interface MissingEventsForServer {
  events: Pdu[];
}

/** Most events one /backfill answers (the reference server asks for and serves 100). */
export const BACKFILL_LIMIT = 100;
/** Most events one /get_missing_events answers (the reference server's cap). */
export const MISSING_EVENTS_LIMIT = 20;
const MISSING_EVENTS_DEFAULT = 10;

/** What serving reads: the room server's core, and whose data was erased. */
export interface ServingDeps {
  readonly core: RoomCore;
  readonly erased: ErasedSenders;
}

// ---- who may ask ----

/** The room's server ACL in its current state (undefined: none). */
async function currentAcl(core: RoomCore, roomId: string) {
  const row = await core.reader.roomRow(roomId);
  if (row?.state_snapshot_nid == null) return undefined;
  const found = await core.reader.stateSubsetOfSnapshot(Number(row.state_snapshot_nid), 'm.room.server_acl', ['']);
  const acl = [...found.values()][0];
  return acl === undefined ? undefined : parseServerAcl(acl.pdu.content);
}

/** Whether the room's server ACL lets `origin` in (no ACL, or an unknown room: yes). */
export async function serverAclAllows(core: RoomCore, origin: string, roomId: string): Promise<boolean> {
  return serverAllowedByAcl(await currentAcl(core, roomId), origin);
}

/**
 * The room, once `origin` is found in it and allowed by its ACL. `at`: events whose state after
 * may show the origin joined when the current state does not.
 */
async function roomForServer(core: RoomCore, origin: string, roomId: string, at: () => Promise<readonly GraphNode[]> = async () => []): Promise<RoomInfo> {
  const room = await core.reader.roomInfo(roomId);
  if (room === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  if (!(await serverJoinedNow(core.db, room.nid, origin)) && !(await joinedAtAny(core, origin, await at()))) {
    throw HearthError.forbidden(`Server ${origin} is not in room ${roomId}`);
  }
  if (!serverAllowedByAcl(await currentAcl(core, roomId), origin)) {
    throw HearthError.forbidden(`Server ${origin} is denied by the server ACL of room ${roomId}`);
  }
  return room;
}

/** Whether some user of `origin` is joined in the state after one of these events. */
async function joinedAtAny(core: RoomCore, origin: string, nodes: readonly GraphNode[]): Promise<boolean> {
  if (nodes.length === 0) return false;
  const events = await core.reader.eventsByNids(nodes.map((n) => n.nid));
  const snapshots = [...events.values()].flatMap((e) => (e.stateAfterNid === undefined ? [] : [e.stateAfterNid]));
  const states = new ServerStates(core.db, origin);
  await states.load(snapshots);
  return snapshots.some((s) => [...(states.get(s)?.memberships.values() ?? [])].includes('join'));
}

/** A stored event of the room that may be served by id; 404 otherwise. */
async function eventInRoom(core: RoomCore, room: RoomInfo, eventId: string): Promise<StoredEvent> {
  const e = await core.reader.event(eventId);
  if (e === undefined || e.roomNid !== room.nid || e.status === 'rejected') throw HearthError.notFound(`Event ${eventId} not found`);
  return e;
}

// ---- history visibility for servers ----

/** What the rules read of a snapshot: the room's history_visibility, and the server's users' memberships. */
interface ServerState {
  readonly visibility: string | undefined;
  readonly memberships: ReadonlyMap<string, string>;
}

function stringField(content: unknown, name: string): string | undefined {
  const v = isJsonObject(content) ? content[name] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** ServerState per snapshot, read in batches and kept for one request. */
class ServerStates {
  private readonly bySnapshot = new Map<number, ServerState>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly serverName: string,
  ) {}

  async load(snapshotNids: readonly (number | undefined)[]): Promise<void> {
    const wanted = [...new Set(snapshotNids)].filter((n): n is number => n !== undefined && !this.bySnapshot.has(n));
    if (wanted.length === 0) return;
    const states = await serverStateInSnapshots(this.db, wanted, this.serverName);
    const nids = [...states.values()].flatMap((s) => [...(s.visibility === undefined ? [] : [s.visibility]), ...s.members.values()]);
    const contents = await contentsByNids(this.db, nids);
    for (const [snapshot, s] of states) {
      const memberships = new Map<string, string>();
      for (const [userId, nid] of s.members) memberships.set(userId, stringField(contents.get(nid), 'membership') ?? 'leave');
      const visibility = s.visibility === undefined ? undefined : stringField(contents.get(s.visibility), 'history_visibility');
      this.bySnapshot.set(snapshot, { visibility, memberships });
    }
  }

  get(snapshotNid: number): ServerState | undefined {
    return this.bySnapshot.get(snapshotNid);
  }
}

/**
 * Whether a server may see an event under `visibility`, given its users' memberships (the
 * reference server's rule for servers): world_readable and shared history are open to any server
 * in the room; invited history to a server with a user invited or joined; joined history to a
 * server with a user joined.
 */
function allowedForServer(visibility: HistoryVisibility, memberships: Iterable<string>): boolean {
  if (visibility === 'world_readable' || visibility === 'shared') return true;
  for (const m of memberships) {
    if (m === 'join') return true;
    if (m === 'invite' && visibility === 'invited') return true;
  }
  return false;
}

/** Which events one server may see, read from each event's own state snapshot. */
class ServerView {
  private readonly states: ServerStates;

  constructor(
    db: Kysely<Schema>,
    private readonly serverName: string,
    private readonly erased: ErasedSenders,
  ) {
    this.states = new ServerStates(db, serverName);
  }

  load(events: readonly StoredEvent[]): Promise<void> {
    return this.states.load(events.map((e) => e.stateBeforeNid));
  }

  visible(e: StoredEvent): boolean {
    // An erased user's events are served pruned to every other server (as the reference server does).
    if (this.erased.size > 0 && this.erased.has(e.sender)) return false;
    // An outlier's state is unknown: like an event before any history_visibility, it is open.
    if (e.stateBeforeNid === undefined) return true;
    const before = this.states.get(e.stateBeforeNid) ?? { visibility: undefined, memberships: new Map<string, string>() };
    const visibility = historyVisibilityOf(before.visibility);
    if (allowedForServer(visibility, before.memberships.values())) return true;
    // Boundaries, as for users: a change of history visibility is seen under the laxer of its two
    // values, and a member event of the server's own user under the membership it sets.
    if (e.type === 'm.room.history_visibility' && e.stateKey === '') {
      return allowedForServer(historyVisibilityOf(stringField(e.pdu.content, 'history_visibility')), before.memberships.values());
    }
    if (e.type === 'm.room.member' && e.stateKey !== undefined && e.stateKey.slice(e.stateKey.indexOf(':') + 1) === this.serverName) {
      const after = new Map(before.memberships).set(e.stateKey, stringField(e.pdu.content, 'membership') ?? 'leave');
      return allowedForServer(visibility, after.values());
    }
    return false;
  }
}

// ---- PDUs ----

/** The PDU as other servers get it: without `unsigned`; redacted when a redaction applies or `prune`. */
function servedPdu(e: { readonly pdu: Pdu; readonly redactedBy: string | undefined }, version: RoomVersion, prune = false): Pdu {
  if (prune || e.redactedBy !== undefined) return redactEvent(e.pdu, version);
  const { unsigned: _unsigned, ...rest } = e.pdu;
  return rest as Pdu;
}

/** The PDUs of these events of the room (rejected ones left out), by depth then id: oldest first. */
export async function pdusOf(core: RoomCore, room: RoomInfo, eventIds: readonly string[]): Promise<Pdu[]> {
  if (eventIds.length === 0) return [];
  const nodes = (await graphNodesByIds(core.db, room.nid, eventIds)).filter((n) => n.status !== 'rejected');
  const out: { depth: number; id: string; pdu: Pdu }[] = [];
  // Not through the event cache: a big room's state would push out what it holds for everyone.
  await core.reader.visitEventPdus(
    nodes.map((n) => n.nid),
    (e) => out.push({ depth: e.pdu.depth, id: e.eventId, pdu: servedPdu(e, room.version) }),
  );
  out.sort((a, b) => a.depth - b.depth || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out.map((x) => x.pdu);
}

/** Events by nid, each served as `view` lets the origin see it. */
async function servedByView(deps: ServingDeps, room: RoomInfo, origin: string, nodes: readonly GraphNode[]): Promise<Map<number, Pdu>> {
  const events = [...(await deps.core.reader.eventsByNids(nodes.map((n) => n.nid))).values()];
  const view = new ServerView(deps.core.db, origin, deps.erased);
  await view.load(events);
  return new Map(events.map((e) => [e.nid, servedPdu(e, room.version, !view.visible(e))]));
}

// ---- the operations ----

/** GET /event/{eventId}: the event, pruned when the origin may not see it. */
export async function eventForServer(deps: ServingDeps, origin: string, eventId: string): Promise<Pdu> {
  const { core } = deps;
  const e = await core.reader.event(eventId);
  if (e === undefined || e.status === 'rejected') throw HearthError.notFound(`Event ${eventId} not found`);
  const room = await roomForServer(core, origin, e.roomId);
  const view = new ServerView(core.db, origin, deps.erased);
  await view.load([e]);
  return servedPdu(e, room.version, !view.visible(e));
}

/** The ids of the state before an event; 404 when it is not known (an outlier). */
async function stateIdsBefore(core: RoomCore, e: StoredEvent): Promise<string[]> {
  if (e.stateBeforeNid === undefined) throw HearthError.notFound(`The state at ${e.eventId} is not known`);
  const { states } = await readSnapshotStates(core.db, [e.stateBeforeNid]);
  return [...(states.get(e.stateBeforeNid)?.events.values() ?? [])].map((s) => s.eventId);
}

/**
 * GET /state_ids/{roomId}?event_id=: the state "at" the event, which the spec and the reference
 * server take as the state before it (the event's own change left out), and the union of that
 * state's auth chains (the state events themselves only where another's chain reaches them).
 */
export async function stateIdsForServer(deps: ServingDeps, origin: string, roomId: string, eventId: string): Promise<StateIdsForServer> {
  const room = await roomForServer(deps.core, origin, roomId);
  const e = await eventInRoom(deps.core, room, eventId);
  const pduIds = await stateIdsBefore(deps.core, e);
  const chain = await authChainIds(deps.core.db, pduIds);
  return { pdu_ids: pduIds, auth_chain_ids: [...chain] };
}

/** GET /state/{roomId}?event_id=: as stateIdsForServer, with the events. */
export async function stateForServer(deps: ServingDeps, origin: string, roomId: string, eventId: string): Promise<StateForServer> {
  const { pdu_ids, auth_chain_ids } = await stateIdsForServer(deps, origin, roomId, eventId);
  const room = (await deps.core.reader.roomInfo(roomId))!;
  return { pdus: await pdusOf(deps.core, room, pdu_ids), auth_chain: await pdusOf(deps.core, room, auth_chain_ids) };
}

/** GET /event_auth/{roomId}/{eventId}: the event's auth events and theirs, recursively (oldest first). */
export async function eventAuthForServer(deps: ServingDeps, origin: string, roomId: string, eventId: string): Promise<EventAuthForServer> {
  const room = await roomForServer(deps.core, origin, roomId);
  await eventInRoom(deps.core, room, eventId);
  return { auth_chain: await pdusOf(deps.core, room, [...(await authChainIds(deps.core.db, [eventId]))]) };
}

/** Events a walk over the timeline enters: accepted ones with known state (soft-failed included). */
function walkable(n: GraphNode): boolean {
  return n.status === 'timeline' || n.status === 'soft_failed';
}

/** Newer first: by depth, then position (off-timeline events by nid). */
function newerFirst(a: GraphNode, b: GraphNode): number {
  return b.depth - a.depth || (b.streamOrdering ?? -Infinity) - (a.streamOrdering ?? -Infinity) || b.nid - a.nid;
}

/**
 * GET /backfill/{roomId}?v=&limit=: the events `fromEventIds` names and those before them, a walk
 * back over prev_events that always takes the deepest event queued next (the reference server's
 * order), at most `limit` (capped at BACKFILL_LIMIT), deepest first.
 */
export async function backfillForServer(deps: ServingDeps, origin: string, roomId: string, fromEventIds: readonly string[], limit: number): Promise<BackfillForServer> {
  const { core } = deps;
  const room = await core.reader.roomInfo(roomId);
  if (room === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  const seeds = (await graphNodesByIds(core.db, room.nid, fromEventIds)).filter(walkable);
  await roomForServer(core, origin, roomId, async () => seeds);
  const max = Math.min(Math.max(Math.floor(Number.isFinite(limit) ? limit : 0), 0), BACKFILL_LIMIT);
  const chosen: GraphNode[] = [];
  const taken = new Set<number>();
  const queued = new Map<number, GraphNode>(seeds.map((n) => [n.nid, n]));
  const prevs = new Map<number, GraphNode[]>();
  while (queued.size > 0 && chosen.length < max) {
    let next: GraphNode | undefined;
    for (const n of queued.values()) if (next === undefined || newerFirst(n, next) < 0) next = n;
    queued.delete(next!.nid);
    chosen.push(next!);
    taken.add(next!.nid);
    if (chosen.length >= max) break;
    if (!prevs.has(next!.nid)) {
      // The prev events of everything queued are read with this one's: they are likely next.
      const want = [next!.nid, ...[...queued.keys()].filter((n) => !prevs.has(n))].slice(0, 500);
      for (const [nid, list] of await prevNodesOf(core.db, room.nid, want)) prevs.set(nid, list);
    }
    for (const p of prevs.get(next!.nid) ?? []) if (walkable(p) && !taken.has(p.nid)) queued.set(p.nid, p);
  }
  chosen.sort(newerFirst);
  const served = await servedByView(deps, room, origin, chosen);
  return { origin: core.serverName, origin_server_ts: core.now(), pdus: chosen.flatMap((n) => served.get(n.nid) ?? []) };
}

/**
 * POST /get_missing_events/{roomId}: a breadth-first walk back over the prev_events of
 * `latest_events` (not returned), never into `earliest_events` nor below `min_depth`, at most
 * `limit` events (default 10, capped at MISSING_EVENTS_LIMIT), oldest first.
 */
export async function missingEventsForServer(deps: ServingDeps, origin: string, roomId: string, request: MissingEventsRequest): Promise<MissingEventsForServer> {
  const { core } = deps;
  const room = await core.reader.roomInfo(roomId);
  if (room === undefined) throw HearthError.notFound(`Unknown room ${roomId}`);
  const latest = (await graphNodesByIds(core.db, room.nid, request.latest_events)).filter((n) => n.status !== 'rejected');
  await roomForServer(core, origin, roomId, async () => latest.filter(walkable));
  const requested = request.limit ?? MISSING_EVENTS_DEFAULT;
  const max = Math.min(Math.max(Math.floor(Number.isFinite(requested) ? requested : 0), 0), MISSING_EVENTS_LIMIT);
  const minDepth = request.min_depth ?? 0;
  const seen = new Set<string>([...request.earliest_events, ...request.latest_events]);
  const found: GraphNode[] = [];
  let front = latest.filter((n) => !request.earliest_events.includes(n.eventId));
  while (front.length > 0 && found.length < max) {
    const prevs = await prevNodesOf(core.db, room.nid, front.map((n) => n.nid));
    const next: GraphNode[] = [];
    walk: for (const n of front) {
      for (const p of [...(prevs.get(n.nid) ?? [])].sort(newerFirst)) {
        if (seen.has(p.eventId)) continue;
        seen.add(p.eventId);
        if (!walkable(p) || p.depth < minDepth) continue;
        found.push(p);
        next.push(p);
        if (found.length >= max) break walk;
      }
    }
    front = next;
  }
  found.sort((a, b) => newerFirst(b, a));
  const served = await servedByView(deps, room, origin, found);
  return { events: found.flatMap((n) => served.get(n.nid) ?? []) };
}
