// Walking a room's timeline from a position, backwards or forwards, keeping the events the user
// may see and the filter lets through, until `limit` are found, the room runs out, or the `to`
// bound is reached. Messages from users the viewer ignores are skipped (their state events are
// kept, as the spec asks). Positions are on the events stream; see rooms/tokens.ts for the tokens.

import { compileEventFilter, type RoomEventFilter } from '../../protocol/filters.js';
import type { RoomReader } from '../reader.js';
import { positionOf, type StoredEvent } from '../stored-event.js';
import type { VisibilityHistory } from '../visibility.js';
import type { StatesBefore } from '../visibility-at.js';

export interface PageRequest {
  readonly roomNid: number;
  readonly userId: string;
  readonly history: VisibilityHistory;
  /** The state before each event, as the visibility rules read it (loaded here, page by page). */
  readonly statesBefore: StatesBefore;
  readonly dir: 'b' | 'f';
  /** Backwards: events at or before this position; forwards: events after it. */
  readonly from: number | undefined;
  /** Backwards: stop at events at or before this position; forwards: after it. */
  readonly to: number | undefined;
  readonly limit: number;
  readonly filter?: RoomEventFilter;
  /** Senders whose non-state events the viewer ignores. */
  readonly ignored?: ReadonlySet<string>;
  /** Every event is shown, whatever the history visibility (a server admin's reading). */
  readonly seesAll?: boolean;
}

export interface Page {
  /** In the walk's order: newest first backwards, oldest first forwards. */
  readonly events: StoredEvent[];
  /**
   * Where the next page starts. As the reference server does, it is given whenever the walk met
   * an event the filter lets through (shown or not), even at the room's end, so that a client
   * paging forward to the newest event can ask again later; undefined only when the walk reached
   * the end without meeting any.
   */
  readonly next: number | undefined;
  /** The position of the first event the walk looked at, if any. */
  readonly firstSeen: number | undefined;
}

/** Rows read per query, and at most read for one page (so a sparse filter cannot scan a room whole). */
const BATCH_MIN = 20;
const BATCH_MAX = 500;
const SCAN_LIMIT = 5_000;

export async function paginate(reader: RoomReader, req: PageRequest): Promise<Page> {
  const matcher = req.filter === undefined ? undefined : compileEventFilter(req.filter);
  const filter = matcher === undefined || matcher.admitsAll ? undefined : matcher;
  const batch = Math.min(BATCH_MAX, Math.max(BATCH_MIN, filter === undefined ? req.limit + 1 : req.limit * 4));
  const events: StoredEvent[] = [];
  let cursor = req.from;
  let firstSeen: number | undefined;
  let scanned = 0;
  let matched = false;
  while (events.length < req.limit && scanned < SCAN_LIMIT) {
    const range =
      req.dir === 'b'
        ? { ...(cursor !== undefined ? { upTo: cursor } : {}), ...(req.to !== undefined ? { after: req.to } : {}) }
        : { ...(cursor !== undefined ? { after: cursor } : {}), ...(req.to !== undefined ? { upTo: req.to } : {}) };
    const rows = await reader.roomEvents(req.roomNid, range, req.dir === 'b' ? 'desc' : 'asc', batch);
    await req.statesBefore.load(rows);
    let consumed = 0;
    for (const e of rows) {
      consumed++;
      scanned++;
      // Read by position: a timeline event.
      const position = positionOf(e);
      firstSeen ??= position;
      cursor = req.dir === 'b' ? position - 1 : position;
      if (filter !== undefined && !filter.matches({ type: e.type, sender: e.sender, room_id: e.roomId, content: e.pdu.content })) continue;
      matched = true;
      const visible = req.seesAll === true || req.statesBefore.canSee(req.history, e, position);
      const ignored = e.stateKey === undefined && req.ignored?.has(e.sender) === true;
      if (visible && !ignored) {
        events.push(e);
        if (events.length >= req.limit) break;
      }
    }
    // Fewer rows than asked and all of them consumed: the room (or the `to` bound) is reached.
    if (rows.length < batch && consumed === rows.length) return { events, next: matched ? cursor : undefined, firstSeen };
  }
  return { events, next: cursor, firstSeen };
}
