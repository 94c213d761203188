// Space hierarchies: the client API's GET /rooms/{roomId}/hierarchy (the space tree below a room,
// depth first, as the reference server walks it) and the federation /hierarchy/{roomId} other
// servers ask of this one (a room and its children, unpaginated).
//
// Each room the user may see (summary.ts) is listed with its m.space.child events; its children
// (those with a non-empty `via`; with suggested_only, the suggested ones) are visited next, in the
// spec's order: a valid `order` first, by `order`, then by the child event's origin_server_ts,
// then by room id. A room is listed once however often it is a child. A room this server is not in
// is asked of the servers its parent's child event names (RemoteHierarchy); a child another
// server already summarised is taken from that answer unless it is a space.
//
// Pages: the walk's remaining queue is kept in memory under a random `next_batch` token for five
// minutes, for the same user, root, suggested_only and max_depth only.

import { randomBytes } from 'node:crypto';
import { HearthError } from '../../protocol/errors.js';
import type { RoomCore } from '../core.js';
import {
  localRoom,
  membershipIn,
  serverMaySee,
  userMaySee,
  type ChildState,
  type RemoteHierarchy,
  type RoomSummaryEntry,
} from './summary.js';

export interface HierarchyRequest {
  readonly suggestedOnly: boolean;
  readonly limit: number;
  readonly maxDepth: number;
  readonly from?: string;
}

export interface HierarchyRoom extends RoomSummaryEntry {
  children_state: ChildState[];
}

export interface HierarchyPage {
  rooms: HierarchyRoom[];
  next_batch?: string;
}

/** The federation /hierarchy answer. */
export interface ServerHierarchy {
  room: HierarchyRoom;
  children: RoomSummaryEntry[];
  inaccessible_children: string[];
}

interface QueueEntry {
  readonly roomId: string;
  readonly depth: number;
  readonly via: readonly string[];
  /** The room as another server summarised it among its parent's children. */
  readonly known?: RoomSummaryEntry;
}

interface Walk {
  readonly userId: string;
  readonly rootId: string;
  readonly suggestedOnly: boolean;
  readonly maxDepth: number;
  readonly queue: QueueEntry[];
  readonly seen: Set<string>;
  readonly expiresAt: number;
}

const WALK_KEPT_MS = 5 * 60_000;
const MAX_WALKS = 1_000;
/** Rooms looked at per page, listed or not, so that a page of a tree of hidden rooms stays short. */
const MAX_VISITS_PER_PAGE = 1_000;
/** Servers asked about one room this server is not in. */
const MAX_VIA = 3;

/** A valid `order`: at most 50 characters, each in U+0020–U+007E. */
function validOrder(order: unknown): order is string {
  return typeof order === 'string' && order.length <= 50 && /^[\x20-\x7e]*$/.test(order);
}

function compareChildren(a: ChildState, b: ChildState): number {
  const oa = a.content['order'];
  const ob = b.content['order'];
  const va = validOrder(oa);
  const vb = validOrder(ob);
  if (va !== vb) return va ? -1 : 1;
  if (va && vb && oa !== ob) return oa < ob ? -1 : 1;
  if (a.origin_server_ts !== b.origin_server_ts) return a.origin_server_ts < b.origin_server_ts ? -1 : 1;
  return a.state_key < b.state_key ? -1 : a.state_key > b.state_key ? 1 : 0;
}

function viaOf(child: ChildState): string[] {
  const via = child.content['via'];
  return Array.isArray(via) ? (via as string[]) : [];
}

/** The children a walk follows, in order: a room id as state key and a `via` of server names. */
function followedChildren(children: readonly ChildState[], suggestedOnly: boolean): ChildState[] {
  return children
    .filter((c) => {
      const via = c.content['via'];
      if (c.type !== 'm.space.child' || !c.state_key.startsWith('!')) return false;
      if (!Array.isArray(via) || via.length === 0 || !via.every((v) => typeof v === 'string')) return false;
      return !suggestedOnly || c.content['suggested'] === true;
    })
    .sort(compareChildren);
}

/** The m.space.child events of a room held here, as hierarchies carry them. */
async function localChildren(core: RoomCore, snapshotNid: number): Promise<ChildState[]> {
  const events = await core.reader.stateSubsetOfSnapshot(snapshotNid, 'm.space.child', 'all');
  return [...events.values()]
    .filter((e) => e.redactedBy === undefined && e.stateKey !== undefined)
    .map((e) => ({ type: e.type, state_key: e.stateKey!, content: e.pdu.content, sender: e.sender, origin_server_ts: e.pdu.origin_server_ts }));
}

export class SpaceHierarchies {
  private readonly walks = new Map<string, Walk>();

  constructor(
    private readonly core: RoomCore,
    private readonly remote: RemoteHierarchy | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  async page(userId: string, roomId: string, req: HierarchyRequest): Promise<HierarchyPage> {
    this.forgetExpired();
    let walk: Walk;
    if (req.from !== undefined) {
      const kept = this.walks.get(req.from);
      if (kept === undefined || kept.userId !== userId || kept.rootId !== roomId) throw HearthError.invalidParam('Unknown pagination token');
      if (kept.suggestedOnly !== req.suggestedOnly || kept.maxDepth !== req.maxDepth) {
        throw HearthError.invalidParam('suggested_only and max_depth cannot change on paginated requests');
      }
      this.walks.delete(req.from);
      walk = kept;
    } else {
      // The root must be held here and visible to the user.
      const root = await localRoom(this.core, roomId);
      if (root === undefined || !(await userMaySee(this.core, root.entry, await membershipIn(this.core, root, userId), userId))) {
        throw HearthError.forbidden(`User ${userId} may not see room ${roomId}`);
      }
      walk = { userId, rootId: roomId, suggestedOnly: req.suggestedOnly, maxDepth: req.maxDepth, queue: [{ roomId, depth: 0, via: [] }], seen: new Set(), expiresAt: 0 };
    }

    const rooms: HierarchyRoom[] = [];
    for (let visits = 0; walk.queue.length > 0 && rooms.length < req.limit && visits < MAX_VISITS_PER_PAGE; visits++) {
      const entry = walk.queue.pop()!;
      if (walk.seen.has(entry.roomId)) continue;
      walk.seen.add(entry.roomId);
      const found = await this.visit(entry, userId, walk.suggestedOnly);
      if (found === undefined) continue;
      const children = followedChildren(found.room.children_state, walk.suggestedOnly);
      rooms.push({ ...found.room, children_state: children });
      if (entry.depth >= walk.maxDepth) continue;
      // Pushed last child first: the first child is the next room visited.
      for (let i = children.length - 1; i >= 0; i--) {
        const child = children[i]!;
        if (walk.seen.has(child.state_key)) continue;
        const known = found.known.get(child.state_key);
        walk.queue.push({ roomId: child.state_key, depth: entry.depth + 1, via: viaOf(child), ...(known !== undefined ? { known } : {}) });
      }
    }
    if (walk.queue.length === 0) return { rooms };
    const token = randomBytes(12).toString('base64url');
    if (this.walks.size >= MAX_WALKS) this.walks.delete(this.walks.keys().next().value as string);
    this.walks.set(token, { ...walk, expiresAt: this.now() + WALK_KEPT_MS });
    return { rooms, next_batch: token };
  }

  /**
   * A room of the walk as the user may see it, with its children and what is already known of
   * them; undefined when it cannot be had or the user may not see it.
   */
  private async visit(entry: QueueEntry, userId: string, suggestedOnly: boolean): Promise<{ room: HierarchyRoom; known: Map<string, RoomSummaryEntry> } | undefined> {
    const local = await localRoom(this.core, entry.roomId);
    if (local !== undefined && (local.joinedHere || this.remote === undefined || entry.via.length === 0)) {
      if (!(await userMaySee(this.core, local.entry, await membershipIn(this.core, local, userId), userId))) return undefined;
      return { room: { ...local.entry, children_state: await localChildren(this.core, Number(local.row.state_snapshot_nid)) }, known: new Map() };
    }
    // Another server's room: a child it summarised already, unless it is a space (whose children
    // that summary does not carry); else its /hierarchy.
    const membership = local === undefined ? 'leave' : await membershipIn(this.core, local, userId);
    if (entry.known !== undefined && entry.known.room_type !== 'm.space') {
      return (await userMaySee(this.core, entry.known, membership, userId)) ? { room: { ...entry.known, children_state: [] }, known: new Map() } : undefined;
    }
    if (this.remote === undefined) return undefined;
    const space = await this.remote.space(entry.roomId, entry.via.slice(0, MAX_VIA), suggestedOnly);
    if (space === undefined || !(await userMaySee(this.core, space.room, membership, userId))) return undefined;
    return { room: { ...space.room, children_state: [...space.room.children_state] }, known: new Map(space.children.map((c) => [c.room_id, c])) };
  }

  /** The federation answer: the room and those of its children `origin` may see (no pages, one level). */
  async forServer(origin: string, roomId: string, suggestedOnly: boolean): Promise<ServerHierarchy> {
    const local = await localRoom(this.core, roomId);
    if (local === undefined || !local.joinedHere || !(await serverMaySee(this.core, local, origin))) throw HearthError.notFound('Unknown room');
    const children = followedChildren(await localChildren(this.core, Number(local.row.state_snapshot_nid)), suggestedOnly);
    const answer: ServerHierarchy = { room: { ...local.entry, children_state: children }, children: [], inaccessible_children: [] };
    for (const child of children) {
      const room = await localRoom(this.core, child.state_key);
      // Rooms this server cannot describe are left out altogether.
      if (room === undefined || !room.joinedHere) continue;
      if (await serverMaySee(this.core, room, origin)) answer.children.push(room.entry);
      else answer.inaccessible_children.push(child.state_key);
    }
    return answer;
  }

  private forgetExpired(): void {
    const now = this.now();
    for (const [token, walk] of this.walks) if (walk.expiresAt <= now) this.walks.delete(token);
  }
}
