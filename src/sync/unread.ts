// Unread notification counts: the events others sent after the user's read receipt (or their
// join, before any receipt), evaluated with the user's push rules; `notify` ones count,
// `highlight` ones count as highlights too. Counts are kept per (user, room) between syncs, so a
// sync evaluates only the events that arrived since the last count; a count kept under rules the
// user has since changed is started over. A count never reads more than a bounded number of events.
//
// Counts are kept per thread (client-server API, "Threaded read receipts"): the main timeline
// ('main': events in no thread, thread roots included) and each thread by its root. An unthreaded
// receipt reads every thread up to its event; a receipt for 'main' or a root only that thread. Each
// thread is counted after the latest receipt that applies to it (or the join). A sync asking for
// `unread_thread_notifications` is given the main timeline's counts and each thread's apart;
// otherwise the sum of all, as the reference server does.

import type { Kysely } from 'kysely';
import { isJsonObject } from '../protocol/json.js';
import { defaultPushRules, evaluatePushRules, senderPowerIn, type PushContext, type PushRuleSet } from '../protocol/push-rules/index.js';
import type { RoomReader } from '../rooms/reader.js';
import { positionOf, type StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import type { NotificationRange, ThreadCounts } from '../storage/push/notifications.js';
import { MAIN_THREAD, threadsOfEvents } from '../storage/rooms/relations.js';
import { ownReadPositionsByThread, READ_RECEIPT_TYPES } from '../storage/sync/memberships.js';
import type { UnreadNotificationCounts } from './response.js';
import type { RoomFacts } from './summary.js';
import type { LoadedTimeline } from './timeline.js';

/** A user's effective push rules; the same object for as long as they do not change. */
export interface PushRuleSource {
  rulesOf(userId: string): Promise<PushRuleSet>;
}

/**
 * What the push-rule pass (push/actions.ts) stored: the events it has evaluated are counted from its
 * rows rather than evaluated again, so counts have no bound on unread events.
 */
export interface StoredNotifications {
  /** Events in (after, upTo] have been evaluated and what notifies stored; undefined until the pass runs. */
  window(): { readonly after: number; readonly upTo: number } | undefined;
  /** Per room and thread, the user's notifications and highlights in the ranges. */
  counts(userId: string, ranges: readonly NotificationRange[]): Promise<ThreadCounts>;
}

/** A room's unread counts: all of them, the main timeline's, and each thread's (those with any). */
export interface RoomUnreadCounts {
  readonly total: UnreadNotificationCounts;
  readonly main: UnreadNotificationCounts;
  readonly threads: ReadonlyMap<string, UnreadNotificationCounts>;
}

interface Tally {
  notifications: number;
  highlights: number;
}

/** Where counting starts: for every thread, and later for the threads with receipts of their own. */
interface Bases {
  readonly all: number;
  readonly own: ReadonlyMap<string, number>;
  /** Identifies the bases (a count is resumed only under the same ones). */
  readonly key: string;
}

function basesOf(receipts: ReadonlyMap<string, number>, joinedFrom: number): Bases {
  const all = Math.max(receipts.get('') ?? 0, joinedFrom);
  const own = new Map<string, number>();
  for (const [thread, position] of receipts) if (thread !== '' && position > all) own.set(thread, position);
  const key = [all, ...[...own].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([t, p]) => `${t}=${p}`)].join('\u0000');
  return { all, own, key };
}

/** The stored notifications of (after, upTo] to count, each thread after its own base. */
function rangesOf(roomId: string, after: number, upTo: number, bases: Bases): NotificationRange[] {
  const later = [...bases.own].filter(([, base]) => base > after);
  const out: NotificationRange[] = [{ roomId, after, upTo, ...(later.length > 0 ? { except: later.map(([t]) => t) } : {}) }];
  for (const [thread, base] of later) if (base < upTo) out.push({ roomId, after: base, upTo, thread });
  return out;
}

function addTo(counts: Map<string, Tally>, thread: string, notifications: number, highlights: number): void {
  const known = counts.get(thread);
  if (known === undefined) counts.set(thread, { notifications, highlights });
  else {
    known.notifications += notifications;
    known.highlights += highlights;
  }
}

function summed(counts: ReadonlyMap<string, Tally>): RoomUnreadCounts {
  let notifications = 0;
  let highlights = 0;
  const threads = new Map<string, UnreadNotificationCounts>();
  for (const [thread, t] of counts) {
    notifications += t.notifications;
    highlights += t.highlights;
    if (thread !== MAIN_THREAD && t.notifications > 0) threads.set(thread, { notification_count: t.notifications, highlight_count: t.highlights });
  }
  const main = counts.get(MAIN_THREAD);
  return {
    total: { notification_count: notifications, highlight_count: highlights },
    main: { notification_count: main?.notifications ?? 0, highlight_count: main?.highlights ?? 0 },
    threads,
  };
}

const NO_RECEIPTS: ReadonlyMap<string, number> = new Map();

/** Only the server-default rules, for counters built without the users' own rules. */
export function defaultRulesOnly(): PushRuleSource {
  const known = new Map<string, PushRuleSet>();
  return {
    rulesOf: async (userId) => {
      let rules = known.get(userId);
      if (rules === undefined) {
        if (known.size >= CACHE_ENTRIES) known.clear();
        known.set(userId, (rules = defaultPushRules(userId)));
      }
      return rules;
    },
  };
}

/** Events evaluated at most for one room in one sync. */
export const MAX_EVALUATED = 100;
/**
 * Events read for counting at most in one sync, beyond those its timelines read anyway. A room
 * past the budget is counted from what is at hand, and counted again (not kept) next time.
 */
export const READ_BUDGET = 2000;
const CACHE_ENTRIES = 20_000;
/** Stream events looked through at most, per range, to learn that a room had none there. */
const QUIET_SCAN = 1000;

export interface UnreadRoom {
  readonly roomId: string;
  readonly roomNid: number;
  /** Where counting starts when the user has no receipt in the room (their membership's position). */
  readonly joinedFrom: number;
  readonly upTo: number;
  /** Events already read for the timeline (they spare a read when they cover the unread range). */
  readonly timeline: LoadedTimeline | undefined;
}

interface Counted {
  /** The rule set the count was made with. */
  readonly rules: PushRuleSet;
  /** Per thread ('' unthreaded), the position the user's read receipts point at. */
  readonly receipts: ReadonlyMap<string, number>;
  /** The receipts stream position `receipts` were read at. */
  readonly receiptsAt: number;
  /** Where counting started (the receipts or join): Bases.key. */
  readonly base: string;
  /** Counted up to and including this position. */
  readonly upTo: number;
  /** Per thread. */
  readonly counts: ReadonlyMap<string, Tally>;
}

export class UnreadCounter {
  private readonly counted = new Map<string, Counted>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly reader: RoomReader,
    private readonly pushRules: PushRuleSource = defaultRulesOnly(),
    private readonly stored?: StoredNotifications,
  ) {}

  /**
   * `receiptStream` says which receipts the pass saw: from `since` (undefined: an initial sync) up to
   * `upTo` on the receipts stream, and the rooms where the user's own receipts moved in it.
   */
  async counts(
    userId: string,
    rooms: readonly UnreadRoom[],
    facts: ReadonlyMap<string, RoomFacts>,
    ignored: ReadonlySet<string>,
    receiptStream: { readonly since: number | undefined; readonly upTo: number; readonly ownMoved: ReadonlySet<string> },
  ): Promise<Map<string, RoomUnreadCounts>> {
    const out = new Map<string, RoomUnreadCounts>();
    if (rooms.length === 0) return out;
    const key = (roomId: string) => `${userId}\u0000${roomId}`;
    // The receipt read by an earlier count holds unless the user's receipts moved since.
    const stillKnown = (roomId: string) => {
      const known = this.counted.get(key(roomId));
      return known !== undefined && receiptStream.since !== undefined && known.receiptsAt >= receiptStream.since && !receiptStream.ownMoved.has(roomId);
    };
    const toRead = rooms.filter((r) => !stillKnown(r.roomId)).map((r) => r.roomId);
    const read = toRead.length === 0 ? new Map<string, Map<string, number>>() : await ownReadPositionsByThread(this.db, userId, toRead, READ_RECEIPT_TYPES);
    const unread = new Set(toRead);
    const rules = await this.pushRules.rulesOf(userId);
    // Per range of the stream before a timeline, the rooms with events there (read once a range).
    const busy = new Map<string, Set<number> | undefined>();
    const quiet = (roomNid: number, after: number, upTo: number): boolean => {
      const range = `${after}:${upTo}`;
      if (!busy.has(range)) busy.set(range, this.reader.recentRooms(after, upTo, QUIET_SCAN));
      const rooms = busy.get(range);
      return rooms !== undefined && !rooms.has(roomNid);
    };
    let budget = READ_BUDGET;
    const window = this.stored?.window();
    const storedRanges: NotificationRange[] = [];
    const done: { roomId: string; counted: Counted | undefined; counts: Map<string, Tally>; bases: Bases; notifying: { event: StoredEvent; highlight: boolean }[] }[] = [];
    for (const room of rooms) {
      const known = this.counted.get(key(room.roomId));
      const receipts = (unread.has(room.roomId) ? read.get(room.roomId) : known?.receipts) ?? NO_RECEIPTS;
      const bases = basesOf(receipts, room.joinedFrom);
      const resume = known !== undefined && known.rules === rules && known.base === bases.key && known.upTo <= room.upTo ? known : undefined;
      let from = resume?.upTo ?? bases.all;
      let at = from < room.upTo ? eventsAtHand(room, from, quiet) : undefined;
      // Events at hand are evaluated here, costing no statement. Past that, what the push-rule
      // pass has evaluated is counted from its rows (however many), and only what it has not
      // reached yet is evaluated here; so are events from before the pass began.
      if ((at === undefined || at.length >= MAX_EVALUATED) && window !== undefined && from >= window.after) {
        const storedUpTo = Math.min(window.upTo, room.upTo);
        if (storedUpTo > from) {
          storedRanges.push(...rangesOf(room.roomId, from, storedUpTo, bases));
          from = storedUpTo;
          at = from < room.upTo ? eventsAtHand(room, from, quiet) : undefined;
        }
      }
      const counts = new Map<string, Tally>();
      for (const [thread, t] of resume?.counts ?? []) counts.set(thread, { ...t });
      // What notifies here is counted once its thread is known (below, for all rooms at once).
      const notifying: { event: StoredEvent; highlight: boolean }[] = [];
      let complete = true;
      if (from < room.upTo) {
        let events: StoredEvent[];
        if (at !== undefined) events = at;
        else if (budget > 0) {
          events = await this.reader.roomEvents(room.roomNid, { after: from, upTo: room.upTo }, 'desc', Math.min(MAX_EVALUATED, budget));
          budget -= events.length;
        } else {
          events = (room.timeline?.scanned ?? []).filter((e) => positionOf(e) > from).slice(0, MAX_EVALUATED);
          complete = false;
        }
        const context = await this.context(userId, facts.get(room.roomId), events);
        for (const e of events) {
          if (e.sender === userId || ignored.has(e.sender)) continue;
          const result = evaluatePushRules(rules, { type: e.type, sender: e.sender, room_id: e.roomId, content: e.pdu.content, ...(e.stateKey !== undefined ? { state_key: e.stateKey } : {}) }, context(e.sender));
          if (result?.notify === true) notifying.push({ event: e, highlight: result.highlight });
        }
      }
      const counted = complete ? { rules, receipts, receiptsAt: receiptStream.upTo, base: bases.key, upTo: Math.max(room.upTo, from), counts } : undefined;
      done.push({ roomId: room.roomId, counted, counts, bases, notifying });
    }
    // Threads of what notified here: from the events themselves, but for relations (an edit or a
    // reaction) to other events, whose threads are read together.
    const notified = done.flatMap((d) => d.notifying.map((n) => ({ eventId: n.event.eventId, content: n.event.pdu.content })));
    const threads = notified.length === 0 ? new Map<string, string>() : await threadsOfEvents(this.db, notified);
    const storedCounts = storedRanges.length === 0 ? undefined : await this.stored!.counts(userId, storedRanges);
    for (const d of done) {
      for (const { event, highlight } of d.notifying) {
        const thread = threads.get(event.eventId) ?? MAIN_THREAD;
        // A thread with a receipt of its own is counted after it.
        if (positionOf(event) > (d.bases.own.get(thread) ?? d.bases.all)) addTo(d.counts, thread, 1, highlight ? 1 : 0);
      }
      for (const [thread, t] of storedCounts?.get(d.roomId) ?? []) addTo(d.counts, thread, t.notifications, t.highlights);
      if (d.counted !== undefined) this.remember(key(d.roomId), d.counted);
      else this.counted.delete(key(d.roomId));
      out.set(d.roomId, summed(d.counts));
    }
    return out;
  }

  /** The push context per sender; power levels are read only when an event asks for them (@room). */
  private async context(
    userId: string,
    facts: RoomFacts | undefined,
    events: readonly StoredEvent[],
  ): Promise<(sender: string) => PushContext> {
    const wantsPower = events.some((e) => {
      const mentions = e.pdu.content['m.mentions'];
      return isJsonObject(mentions) && mentions['room'] === true;
    });
    const power =
      wantsPower && facts?.snapshotNid !== undefined ? await this.reader.senderPowerAt(facts.snapshotNid, events[0]!.roomId) : senderPowerIn(undefined);
    const members = facts?.joinedMembers ?? 0;
    return (sender) => ({ userId, roomMemberCount: members, ...power(sender) });
  }

  private remember(key: string, value: Counted): void {
    this.counted.delete(key);
    this.counted.set(key, value);
    if (this.counted.size > CACHE_ENTRIES) this.counted.delete(this.counted.keys().next().value as string);
  }
}

/**
 * The events of (from, upTo] (the newest MAX_EVALUATED), when the timeline read them all, or read
 * all there were since a stretch of the stream before it that held none of the room's.
 */
function eventsAtHand(
  room: UnreadRoom,
  from: number,
  quiet: (roomNid: number, after: number, upTo: number) => boolean,
): StoredEvent[] | undefined {
  const t = room.timeline;
  if (t === undefined) return undefined;
  if (t.coveredAfter > from && !quiet(room.roomNid, from, t.coveredAfter)) return undefined;
  return t.scanned.filter((e) => positionOf(e) > from && positionOf(e) <= room.upTo).slice(0, MAX_EVALUATED);
}
