// POST /search, room_events: the index's matches in the rooms the user is or was in, kept only when
// the user may see them (history visibility, as /messages), not redacted and not from a user they
// ignore; with the context, state and groupings asked for. Matches are read from the index page by
// page until the limit is met, so the visibility check never reads a whole room.

import { compileEventFilter } from '../../protocol/filters.js';
import { isJsonObject } from '../../protocol/json.js';
import { decodeSearchCursor, encodeSearchCursor, type RoomEventsSearch, type SearchCursor } from '../../protocol/search.js';
import type { DialectName } from '../../storage/database.js';
import { countMatches, searchIndex, searchWords, type SearchHit, type SearchQuery } from '../../storage/search/event-search.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomCore } from '../core.js';
import { positionOf, type StoredEvent } from '../stored-event.js';
import { encodeTimelineToken } from '../tokens.js';
import type { VisibilityHistory } from '../visibility.js';
import { StatesBefore } from '../visibility-at.js';
import { loadVisibilityHistories } from './history.js';
import type { IgnoredUsersOf } from './messages.js';
import { paginate } from './paginate.js';

/** Results per page without a filter limit, and at most. */
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;
/** Matches read from the index for one page at most (the rest is left to next_batch). */
const SCAN_LIMIT = 2_000;

export interface SearchIndexConfig {
  readonly dialect: DialectName;
  /** PostgreSQL's text search configuration. */
  readonly textSearchConfig: string;
}

interface SearchResult {
  rank: number;
  result: ClientEvent;
  context?: {
    start: string;
    end: string;
    events_before: ClientEvent[];
    events_after: ClientEvent[];
    profile_info?: Record<string, { displayname?: string; avatar_url?: string }>;
  };
}

export interface RoomEventsResults {
  count: number;
  highlights: string[];
  results: SearchResult[];
  next_batch?: string;
  state?: Record<string, ClientEvent[]>;
  groups?: Record<string, Record<string, { results: string[]; order: number; next_batch?: string }>>;
}

interface RoomStanding {
  readonly roomId: string;
  readonly roomNid: number;
  readonly joined: boolean;
  /** The user's last membership event (for the state a departed user last saw). */
  readonly membershipNid: number;
}

export async function searchRoomEvents(
  core: RoomCore,
  index: SearchIndexConfig,
  actor: Actor,
  req: RoomEventsSearch,
  nextBatch: string | undefined,
  ignoredUsers: IgnoredUsersOf,
): Promise<RoomEventsResults> {
  const userId = actor.userId;
  const cursor: SearchCursor = nextBatch === undefined ? { order: req.orderBy, offset: 0, before: undefined } : decodeSearchCursor(nextBatch, req.orderBy);
  const matcher = compileEventFilter(req.filter);
  const limit = Math.min(req.filter.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  const memberships = await core.reader.roomsOfUser(userId, ['join', 'leave', 'ban']);
  const rooms = new Map<number, RoomStanding>();
  for (const m of memberships) {
    if (m.forgotten !== 0 || !matcher.allowsRoom(m.room_id)) continue;
    rooms.set(Number(m.room_nid), { roomId: m.room_id, roomNid: Number(m.room_nid), joined: m.membership === 'join', membershipNid: Number(m.event_nid) });
  }
  const words = searchWords(req.searchTerm);
  const exact = (types: readonly string[] | undefined) => (types === undefined || types.some((t) => t.includes('*')) ? undefined : types);
  const types = exact(req.filter.types);
  const notTypes = exact(req.filter.not_types);
  const query: SearchQuery = {
    words,
    config: index.textSearchConfig,
    roomNids: [...rooms.keys()],
    keys: req.keys,
    ...(req.filter.senders !== undefined ? { senders: req.filter.senders } : {}),
    ...(req.filter.not_senders !== undefined ? { notSenders: req.filter.not_senders } : {}),
    ...(types !== undefined ? { types } : {}),
    ...(notTypes !== undefined ? { notTypes } : {}),
  };
  // A rank page counts its window itself; a recent page's count runs beside the page's reads (on
  // PostgreSQL, on another connection).
  let counting = req.orderBy === 'rank' ? undefined : countMatches(core.db, index.dialect, query);
  counting?.catch(() => undefined);
  const ignored = await ignoredUsers(userId);
  const histories = new Map<number, VisibilityHistory>();
  const statesBefore = new StatesBefore(core.db, userId);
  const loadHistories = async (roomNids: Iterable<number>) => {
    const wanted = [...new Set(roomNids)].filter((nid) => !histories.has(nid));
    if (wanted.length > 0) for (const [nid, h] of await loadVisibilityHistories(core.db, wanted, userId)) histories.set(nid, h);
  };
  const historyOf = (roomNid: number) => histories.get(roomNid)!;

  // Matches, page by page, until `limit` are kept or the index (or the scan bound) runs out.
  const kept: { hit: SearchHit; event: StoredEvent }[] = [];
  let offset = cursor.offset;
  let before = cursor.before;
  let exhausted = false;
  let scanned = 0;
  let reads = 0;
  while (kept.length < limit && !exhausted && scanned < SCAN_LIMIT) {
    // Each read of a rank page ranks its whole window again: when matches are hidden, read more at once.
    const batch = Math.min(500, Math.max(20, (limit - kept.length) * 3) * 2 ** reads++);
    const hits = await searchIndex(core.db, index.dialect, query, req.orderBy === 'rank' ? { order: 'rank', offset, before: undefined, limit: batch } : { order: 'recent', offset: 0, before, limit: batch });
    if (hits.length < batch) exhausted = true;
    if (counting === undefined && hits[0]?.count !== undefined) counting = Promise.resolve(hits[0].count);
    const events = await core.reader.eventsByNids(hits.map((h) => h.eventNid));
    await Promise.all([statesBefore.load([...events.values()]), loadHistories(hits.map((h) => h.roomNid))]);
    let consumed = 0;
    for (const hit of hits) {
      consumed++;
      scanned++;
      offset++;
      before = hit.position;
      const e = events.get(hit.eventNid);
      if (e === undefined || e.redactedBy !== undefined || e.streamOrdering === undefined) continue;
      if (!matcher.matches({ type: e.type, sender: e.sender, room_id: e.roomId, content: e.pdu.content })) continue;
      if (e.stateKey === undefined && ignored.has(e.sender)) continue;
      if (!statesBefore.canSee(historyOf(e.roomNid), e, positionOf(e))) continue;
      kept.push({ hit, event: e });
      if (kept.length >= limit) break;
    }
    if (consumed < hits.length) exhausted = false;
  }
  const next = exhausted || limit === 0 ? undefined : encodeSearchCursor({ order: req.orderBy, offset, before });

  const now = core.now();
  const viewer = { userId, deviceId: actor.deviceId };
  const clientEvents = await core.reader.clientEvents(
    kept.map((k) => k.event),
    { now, viewer },
  );
  const results: SearchResult[] = [];
  for (let i = 0; i < kept.length; i++) {
    const { hit, event } = kept[i]!;
    const result: SearchResult = { rank: hit.rank, result: clientEvents[i]! };
    if (req.eventContext !== undefined) {
      result.context = await contextOf(core, event, req.eventContext, { history: historyOf(event.roomNid), statesBefore, ignored, viewer, now });
    }
    results.push(result);
  }
  const out: RoomEventsResults = {
    count: await (counting ?? countMatches(core.db, index.dialect, query)),
    highlights: highlightsOf(words, kept.map((k) => k.event)),
    results,
  };
  if (next !== undefined) out.next_batch = next;
  const resultRooms = [...new Set(kept.map((k) => k.event.roomNid))];
  if (req.includeState) {
    out.state = {};
    for (const nid of resultRooms) {
      const room = rooms.get(nid)!;
      out.state[room.roomId] = await roomState(core, room, { now, viewer });
    }
  }
  if (req.groupBy.length > 0) {
    out.groups = {};
    for (const key of req.groupBy) {
      const groups: Record<string, { results: string[]; order: number; next_batch?: string }> = {};
      for (const { event } of kept) {
        const value = key === 'room_id' ? event.roomId : event.sender;
        groups[value] ??= { results: [], order: Object.keys(groups).length + 1, ...(next !== undefined ? { next_batch: next } : {}) };
        groups[value].results.push(event.eventId);
      }
      out.groups[key] = groups;
    }
  }
  return out;
}

/** The events around a result (as the user may see them) and, when asked, their senders' profiles. */
async function contextOf(
  core: RoomCore,
  event: StoredEvent,
  ask: NonNullable<RoomEventsSearch['eventContext']>,
  ctx: { history: VisibilityHistory; statesBefore: StatesBefore; ignored: ReadonlySet<string>; viewer: { userId: string; deviceId: string | null }; now: number },
): Promise<NonNullable<SearchResult['context']>> {
  const position = positionOf(event);
  const common = { roomNid: event.roomNid, userId: ctx.viewer.userId, history: ctx.history, statesBefore: ctx.statesBefore, ignored: ctx.ignored, to: undefined };
  const before = ask.beforeLimit === 0 ? { events: [] } : await paginate(core.reader, { ...common, dir: 'b', from: position - 1, limit: ask.beforeLimit });
  const after = ask.afterLimit === 0 ? { events: [] } : await paginate(core.reader, { ...common, dir: 'f', from: position, limit: ask.afterLimit });
  const oldest = before.events[before.events.length - 1] ?? event;
  const newest = after.events[after.events.length - 1] ?? event;
  const options = { now: ctx.now, viewer: ctx.viewer };
  const context: NonNullable<SearchResult['context']> = {
    start: encodeTimelineToken(positionOf(oldest) - 1),
    end: encodeTimelineToken(positionOf(newest)),
    events_before: await core.reader.clientEvents(before.events, options),
    events_after: await core.reader.clientEvents(after.events, options),
  };
  if (ask.includeProfile) {
    const senders = [...new Set([event, ...before.events, ...after.events].map((e) => e.sender))];
    const members = event.stateAfterNid === undefined ? new Map() : await core.reader.stateSubsetOfSnapshot(event.stateAfterNid, 'm.room.member', senders);
    const profiles: Record<string, { displayname?: string; avatar_url?: string }> = {};
    for (const member of members.values()) {
      const c = (member as StoredEvent).pdu.content;
      if (!isJsonObject(c) || (member as StoredEvent).stateKey === undefined) continue;
      profiles[(member as StoredEvent).stateKey!] = {
        ...(typeof c['displayname'] === 'string' ? { displayname: c['displayname'] } : {}),
        ...(typeof c['avatar_url'] === 'string' ? { avatar_url: c['avatar_url'] } : {}),
      };
    }
    context.profile_info = profiles;
  }
  return context;
}

/** A joined user sees the room's current state; one who left, the state as they left it. */
async function roomState(core: RoomCore, room: RoomStanding, options: { now: number; viewer: { userId: string; deviceId: string | null } }): Promise<ClientEvent[]> {
  if (room.joined) return core.reader.clientEvents([...(await core.reader.currentState(room.roomId)).values()], options);
  const membership = (await core.reader.eventsByNids([room.membershipNid])).get(room.membershipNid);
  if (membership === undefined) return [];
  return core.reader.clientEvents([...(await core.reader.stateAfter(membership)).values()], options);
}

/** The words of the results that the search matched: the search's words and the longer words they begin. */
function highlightsOf(words: readonly string[], events: readonly StoredEvent[]): string[] {
  const out = new Set(words);
  for (const e of events) {
    const c = e.pdu.content;
    if (!isJsonObject(c)) continue;
    for (const field of ['body', 'name', 'topic']) {
      const v = c[field];
      if (typeof v !== 'string') continue;
      for (const token of v.normalize('NFC').match(/[\p{L}\p{N}]+/gu) ?? []) {
        const lower = token.toLowerCase();
        if (words.some((w) => lower.startsWith(w))) out.add(lower);
      }
      if (out.size >= 100) break;
    }
  }
  return [...out];
}
