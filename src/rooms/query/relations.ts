// GET /rooms/{roomId}/relations/{eventId}[/{relType}[/{eventType}]] and GET /rooms/{roomId}/threads
// (client v1): the events relating to one the user may see, and a room's threads by their newest
// event, each as the user may see it (history visibility, ignored users), with bundled
// aggregations. Pages are bounded by positions on the events stream (`t<position>` tokens).
//
// With `recurse`, events relating to the relating events are included too, to a depth of 3, as the
// reference server does (MSC3981); the relation type and event type filters apply at every depth.

import { HearthError } from '../../protocol/errors.js';
import { relatingIds, relationPage, threadsOfRoom } from '../../storage/rooms/relations.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import { isServed, positionOf, type StoredEvent } from '../stored-event.js';
import { decodeTimelineToken, encodeTimelineToken } from '../tokens.js';
import type { VisibilityHistory } from '../visibility.js';
import { StatesBefore } from '../visibility-at.js';
import { requireHistoryAccess, roomAccess } from './access.js';
import { visibleEvent } from './events.js';
import { loadVisibilityHistory } from './history.js';
import type { IgnoredUsersOf } from './messages.js';

export interface RelationsRequest {
  readonly relType?: string;
  readonly eventType?: string;
  readonly from?: string;
  readonly to?: string;
  readonly limit: number;
  readonly dir: 'b' | 'f';
  readonly recurse: boolean;
}

export interface RelationsPage {
  chunk: ClientEvent[];
  next_batch?: string;
  prev_batch?: string;
  recursion_depth?: number;
}

const RECURSION_DEPTH = 3;
/** Relating events followed per level of a recursion. */
const MAX_LEVEL = 10_000;

/** Of `events`, those the user may see, in the given order. */
async function seen(core: RoomCore, userId: string, history: VisibilityHistory, ignored: ReadonlySet<string>, events: readonly StoredEvent[]): Promise<StoredEvent[]> {
  const served = events.filter((e) => isServed(e) && !(e.stateKey === undefined && ignored.has(e.sender)));
  const statesBefore = new StatesBefore(core.db, userId);
  await statesBefore.load(served);
  return served.filter((e) => statesBefore.canSee(history, e, positionOf(e)));
}

export async function eventRelations(core: RoomCore, actor: Actor, roomId: string, eventId: string, req: RelationsRequest, ignoredUsers: IgnoredUsersOf): Promise<RelationsPage> {
  const { access, history, ignored } = await visibleEvent(core, actor, roomId, eventId, false, ignoredUsers);
  const roomNid = access.room.nid;
  const from = req.from === undefined ? undefined : decodeTimelineToken(req.from);
  const to = req.to === undefined ? undefined : decodeTimelineToken(req.to);
  const filters = { roomNid, ...(req.relType !== undefined ? { relType: req.relType } : {}), ...(req.eventType !== undefined ? { type: req.eventType } : {}) };
  const bounds = { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}), dir: req.dir, limit: req.limit + 1 };

  let rows = await relationPage(core.db, { ...filters, ...bounds, targets: [eventId] });
  if (req.recurse) {
    // Each level's relating events, whatever their type, lead to the next level.
    let level = [eventId];
    for (let depth = 2; depth <= RECURSION_DEPTH && level.length > 0; depth++) {
      level = await relatingIds(core.db, roomNid, level, MAX_LEVEL);
      rows = rows.concat(await relationPage(core.db, { ...filters, ...bounds, targets: level }));
    }
    rows.sort((a, b) => (req.dir === 'b' ? b.position - a.position : a.position - b.position));
    rows = rows.slice(0, req.limit + 1);
  }
  const more = rows.length > req.limit;
  const page = rows.slice(0, req.limit);
  const events = await core.reader.eventsByNids(page.map((r) => r.eventNid));
  const ordered = page.flatMap((r) => events.get(r.eventNid) ?? []);
  const visible = await seen(core, actor.userId, history, ignored, ordered);
  const out: RelationsPage = { chunk: await core.reader.clientEvents(visible, { now: core.now(), viewer: actor }) };
  if (more) out.next_batch = encodeTimelineToken(page[page.length - 1]!.position);
  if (req.from !== undefined) out.prev_batch = req.from;
  if (req.recurse) out.recursion_depth = RECURSION_DEPTH;
  return out;
}

export interface ThreadsRequest {
  readonly include: 'all' | 'participated';
  readonly from?: string;
  readonly limit: number;
}

export async function roomThreads(core: RoomCore, actor: Actor, roomId: string, req: ThreadsRequest, ignoredUsers: IgnoredUsersOf): Promise<{ chunk: ClientEvent[]; next_batch?: string }> {
  const access = await roomAccess(core, roomId, actor.userId);
  requireHistoryAccess(access, actor.userId);
  const before = req.from === undefined ? undefined : decodeTimelineToken(req.from);
  const rows = await threadsOfRoom(core.db, access.room.nid, before, req.limit + 1, req.include === 'participated' ? actor.userId : undefined);
  const more = rows.length > req.limit;
  const page = rows.slice(0, req.limit);
  const roots = await core.reader.events(page.map((r) => r.root));
  const ordered = page.flatMap((r) => {
    const root = roots.get(r.root);
    return root !== undefined && root.roomId === roomId ? [root] : [];
  });
  const [history, ignored] = await Promise.all([loadVisibilityHistory(core.db, access.room.nid, actor.userId), ignoredUsers(actor.userId)]);
  const visible = await seen(core, actor.userId, history, ignored, ordered);
  const out: { chunk: ClientEvent[]; next_batch?: string } = { chunk: await core.reader.clientEvents(visible, { now: core.now(), viewer: actor }) };
  if (more) out.next_batch = encodeTimelineToken(page[page.length - 1]!.latestPosition);
  return out;
}

export function parseInclude(value: string | undefined): 'all' | 'participated' {
  if (value === undefined || value === 'all') return 'all';
  if (value === 'participated') return 'participated';
  throw HearthError.invalidParam("include must be 'all' or 'participated'");
}
