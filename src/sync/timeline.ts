// Room timelines for sync: the latest events of each room in its range, as the user may see them
// (history visibility), without ignored users' messages, through the filter's timeline part.
// The first page of every room comes from one batched read; a room whose first page the filter
// thins out reads further pages on its own, up to a bound.

import type { Kysely } from 'kysely';
import type { RoomReader } from '../rooms/reader.js';
import { positionOf, type StoredEvent } from '../rooms/stored-event.js';
import { encodeTimelineToken } from '../rooms/tokens.js';
import type { Schema } from '../storage/schema.js';
import { latestEventsOfRooms, type PositionRange } from '../storage/sync/events.js';
import { currentSnapshotsAt } from '../storage/sync/state-deltas.js';
import { SinceJoin } from './since-join.js';
import { HistoryRecall } from './history-recall.js';
import type { SyncPass } from './pass.js';
import type { SharedReads } from './shared-reads.js';

export const DEFAULT_TIMELINE_LIMIT = 10;
export const MAX_TIMELINE_LIMIT = 500;
/** Events read at most for one room's timeline, however sparse the filter. */
const SCAN_LIMIT = 1000;
const PAGE = 100;

export interface TimelineRequest {
  readonly roomId: string;
  readonly roomNid: number;
  readonly range: PositionRange;
  /** Events at or after this position are visible to the user without a history check. */
  readonly visibleFrom: number | undefined;
  /**
   * Joined since the token of an incremental sync: the timeline is limited whatever it holds, as
   * the reference server marks it, since the client has none of the room's history.
   */
  readonly newlyJoined?: boolean;
}

export interface LoadedTimeline {
  /** What the client gets, oldest first. */
  readonly events: StoredEvent[];
  readonly limited: boolean;
  readonly prevBatch: string;
  /** Every event read, newest first, whether shown or not. */
  readonly scanned: StoredEvent[];
  /** `scanned` holds every event of the room in (coveredAfter, range.upTo]. */
  readonly coveredAfter: number;
  /** The snapshot of the room's state at range.upTo, when known. */
  readonly stateAtEnd: number | undefined;
}

export function timelineLimit(pass: SyncPass): number {
  return Math.min(pass.filter.timeline.limit ?? DEFAULT_TIMELINE_LIMIT, MAX_TIMELINE_LIMIT);
}

const rangeKey = (r: PositionRange) => `${r.after ?? ''}:${r.upTo}`;

/** The timelines of the rooms asked, keyed by room id. */
export async function loadTimelines(
  db: Kysely<Schema>,
  reader: RoomReader,
  shared: SharedReads,
  pass: SyncPass,
  requests: readonly TimelineRequest[],
): Promise<Map<string, LoadedTimeline>> {
  const out = new Map<string, LoadedTimeline>();
  if (requests.length === 0) return out;
  const limit = timelineLimit(pass);
  const pageSize = limit + 1;

  // First pages, one batched read per distinct range.
  const groups = new Map<string, TimelineRequest[]>();
  for (const r of requests) {
    const key = rangeKey(r.range);
    let list = groups.get(key);
    if (!list) groups.set(key, (list = []));
    list.push(r);
  }
  const positions = new Map<number, number[]>();
  // The range since the token is already in memory (the pass's window): no read for it.
  const window = pass.since === undefined ? undefined : await pass.window();
  const sinceKey = pass.since === undefined ? undefined : rangeKey({ after: pass.since.events, upTo: pass.upTo.events });
  for (const [key, group] of groups) {
    if (window !== undefined && key === sinceKey) {
      const wanted = new Set(group.map((r) => r.roomNid));
      for (let i = window.length - 1; i >= 0; i--) {
        const e = window[i]!;
        if (!wanted.has(e.roomNid)) continue;
        let list = positions.get(e.roomNid);
        if (!list) positions.set(e.roomNid, (list = []));
        if (list.length < pageSize) list.push(e.eventNid);
      }
      continue;
    }
    const found = await latestEventsOfRooms(db, group.map((r) => r.roomNid), group[0]!.range, pageSize);
    for (const [roomNid, list] of found) positions.set(roomNid, list.map((p) => p.eventNid));
  }
  const events = await shared.events([...positions.values()].flat());
  const ignored = await pass.ignored();
  const roomIds = new Map(requests.map((r) => [r.roomNid, r.roomId]));
  const history = new HistoryRecall(db, pass.userId, async (roomNid) => {
    const roomId = roomIds.get(roomNid)!;
    return (await shared.roomFacts([{ roomId, roomNid }], pass.upTo.events)).get(roomId)?.snapshotNid;
  });
  const firstPages = new Map<string, StoredEvent[]>();
  for (const r of requests) {
    firstPages.set(r.roomId, (positions.get(r.roomNid) ?? []).map((nid) => events.get(nid)).filter((e): e is StoredEvent => e !== undefined));
  }
  const sinceJoin = new SinceJoin(db);
  await sinceJoin.confirm(requests.flatMap((r) => firstPages.get(r.roomId)!.map((e) => ({ visibleFrom: r.visibleFrom, e }))));
  const needHistory = requests.filter((r) => firstPages.get(r.roomId)!.some((e) => !sinceJoin.sure(r.visibleFrom, e))).map((r) => r.roomNid);
  await history.prefetch(needHistory);
  // The state before each event to check, for every room's first page at once.
  const toCheck = requests.flatMap((r) => firstPages.get(r.roomId)!.filter((e) => !sinceJoin.sure(r.visibleFrom, e)));
  await history.prefetchStatesBefore(toCheck);

  for (const r of requests) {
    out.set(r.roomId, await walk(reader, pass, r, limit, firstPages.get(r.roomId)!, pageSize, ignored, history, sinceJoin));
  }
  return out;
}

async function walk(
  reader: RoomReader,
  pass: SyncPass,
  r: TimelineRequest,
  limit: number,
  firstPage: StoredEvent[],
  pageSize: number,
  ignored: ReadonlySet<string>,
  history: HistoryRecall,
  sinceJoin: SinceJoin,
): Promise<LoadedTimeline> {
  const matcher = pass.filter.timeline;
  /** Per event of a page, whether the timeline shows it. */
  const accepted = async (page: readonly StoredEvent[]): Promise<boolean[]> => {
    await sinceJoin.confirm(page.map((e) => ({ visibleFrom: r.visibleFrom, e })));
    await history.prefetchStatesBefore(page.filter((e) => !sinceJoin.sure(r.visibleFrom, e)));
    const out: boolean[] = [];
    const hiddenState: StoredEvent[] = [];
    for (const e of page) {
      if (!matcher.matches({ type: e.type, sender: e.sender, room_id: e.roomId, content: e.pdu.content })) out.push(false);
      else if (e.stateKey === undefined && ignored.has(e.sender)) out.push(false);
      // The user's own member events are theirs to see; events after their join mostly need no check.
      else if (e.type === 'm.room.member' && e.stateKey === pass.userId) out.push(true);
      else if (sinceJoin.sure(r.visibleFrom, e)) out.push(true);
      else {
        const seen = await history.canSee(r.roomNid, e);
        out.push(seen);
        if (!seen && e.stateKey !== undefined) hiddenState.push(e);
      }
    }
    // State events the rules hide are shown still when they are the room's current state.
    if (hiddenState.length > 0) {
      const current = await history.stillCurrent(r.roomNid, hiddenState);
      page.forEach((e, i) => {
        if (current.has(e.nid)) out[i] = true;
      });
    }
    return out;
  };

  const scanned: StoredEvent[] = [];
  const kept: StoredEvent[] = [];
  let page = firstPage;
  let exhausted = page.length < pageSize;
  let full = false;
  for (;;) {
    const verdicts = await accepted(page);
    for (const [i, e] of page.entries()) {
      scanned.push(e);
      if (verdicts[i]) kept.push(e);
      if (kept.length > limit) {
        full = true;
        break;
      }
    }
    if (full || exhausted || scanned.length >= SCAN_LIMIT) break;
    const cursor = positionOf(scanned[scanned.length - 1]!) - 1;
    const size = Math.min(PAGE, SCAN_LIMIT - scanned.length);
    page = await reader.roomEvents(r.roomNid, { ...(r.range.after !== undefined ? { after: r.range.after } : {}), upTo: cursor }, 'desc', size);
    exhausted = page.length < size;
  }

  const shown = kept.slice(0, limit).reverse();
  const reachedStart = exhausted && !full;
  const last = scanned[scanned.length - 1];
  return {
    events: shown,
    limited: !reachedStart || r.newlyJoined === true,
    prevBatch: encodeTimelineToken(shown.length > 0 ? positionOf(shown[0]!) - 1 : r.range.upTo),
    scanned,
    coveredAfter: reachedStart || last === undefined ? (r.range.after ?? 0) : positionOf(last) - 1,
    stateAtEnd: scanned[0]?.stateAfterNid,
  };
}

/** The current-state snapshot at `upTo` of rooms whose timeline range held no event, one read per distinct `upTo`. */
export async function statesAtEnd(db: Kysely<Schema>, rooms: readonly { roomNid: number; upTo: number }[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const byUpTo = new Map<number, number[]>();
  for (const r of rooms) {
    let list = byUpTo.get(r.upTo);
    if (!list) byUpTo.set(r.upTo, (list = []));
    list.push(r.roomNid);
  }
  for (const [upTo, roomNids] of byUpTo) {
    for (const [roomNid, snapshot] of await currentSnapshotsAt(db, roomNids, upTo)) out.set(roomNid, snapshot);
  }
  return out;
}
