// Unread notification counts: the events others sent after the user's read receipt (or their
// join, before any receipt), evaluated with the user's push rules; `notify` ones count,
// `highlight` ones count as highlights too. Counts are kept per (user, room) between syncs, so a
// sync evaluates only the events that arrived since the last count; a count kept under rules the
// user has since changed is started over. A count never reads more than a bounded number of events.

import type { Kysely } from 'kysely';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { defaultPushRules, evaluatePushRules, senderPowerIn, type PushContext, type PushRuleSet } from '../protocol/push-rules/index.js';
import type { RoomReader } from '../rooms/reader.js';
import { positionOf, type StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import { ownReadPositions, READ_RECEIPT_TYPES } from '../storage/sync/memberships.js';
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
  /** Per room, the user's notifications and highlights in the room's range (after, upTo]. */
  counts(userId: string, ranges: readonly StoredRange[]): Promise<Map<string, { notifications: number; highlights: number }>>;
}

export interface StoredRange {
  readonly roomId: string;
  readonly after: number;
  readonly upTo: number;
}

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
  /** The position the user's read receipt points at, if any. */
  readonly receipt: number | undefined;
  /** The receipts stream position `receipt` was read at. */
  readonly receiptsAt: number;
  /** Counting started after this position (the receipt or join). */
  readonly base: number;
  /** Counted up to and including this position. */
  readonly upTo: number;
  readonly notifications: number;
  readonly highlights: number;
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
   * `receipts` says which receipts the pass saw: from `since` (undefined: an initial sync) up to
   * `upTo` on the receipts stream, and the rooms where the user's own receipts moved in it.
   */
  async counts(
    userId: string,
    rooms: readonly UnreadRoom[],
    facts: ReadonlyMap<string, RoomFacts>,
    ignored: ReadonlySet<string>,
    receipts: { readonly since: number | undefined; readonly upTo: number; readonly ownMoved: ReadonlySet<string> },
  ): Promise<Map<string, UnreadNotificationCounts>> {
    const out = new Map<string, UnreadNotificationCounts>();
    if (rooms.length === 0) return out;
    const key = (roomId: string) => `${userId}\u0000${roomId}`;
    // The receipt read by an earlier count holds unless the user's receipts moved since.
    const stillKnown = (roomId: string) => {
      const known = this.counted.get(key(roomId));
      return known !== undefined && receipts.since !== undefined && known.receiptsAt >= receipts.since && !receipts.ownMoved.has(roomId);
    };
    const toRead = rooms.filter((r) => !stillKnown(r.roomId)).map((r) => r.roomId);
    const read = toRead.length === 0 ? new Map<string, number>() : await ownReadPositions(this.db, userId, toRead, READ_RECEIPT_TYPES);
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
    const storedRanges: StoredRange[] = [];
    const done: { roomId: string; counted: Counted | undefined; notifications: number; highlights: number }[] = [];
    for (const room of rooms) {
      const known = this.counted.get(key(room.roomId));
      const receipt = unread.has(room.roomId) ? read.get(room.roomId) : known?.receipt;
      const base = Math.max(receipt ?? 0, room.joinedFrom);
      const resume = known !== undefined && known.rules === rules && known.base === base && known.upTo <= room.upTo ? known : undefined;
      let from = resume?.upTo ?? base;
      let at = from < room.upTo ? eventsAtHand(room, from, quiet) : undefined;
      // Events at hand are evaluated here, costing no statement. Past that, what the push-rule
      // pass has evaluated is counted from its rows (however many), and only what it has not
      // reached yet is evaluated here; so are events from before the pass began.
      if ((at === undefined || at.length >= MAX_EVALUATED) && window !== undefined && from >= window.after) {
        const storedUpTo = Math.min(window.upTo, room.upTo);
        if (storedUpTo > from) {
          storedRanges.push({ roomId: room.roomId, after: from, upTo: storedUpTo });
          from = storedUpTo;
          at = from < room.upTo ? eventsAtHand(room, from, quiet) : undefined;
        }
      }
      let notifications = resume?.notifications ?? 0;
      let highlights = resume?.highlights ?? 0;
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
          if (result?.notify === true) {
            notifications++;
            if (result.highlight) highlights++;
          }
        }
      }
      const counted = complete ? { rules, receipt, receiptsAt: receipts.upTo, base, upTo: Math.max(room.upTo, from), notifications, highlights } : undefined;
      done.push({ roomId: room.roomId, counted, notifications, highlights });
    }
    const storedCounts = storedRanges.length === 0 ? undefined : await this.stored!.counts(userId, storedRanges);
    for (const d of done) {
      const extra = storedCounts?.get(d.roomId);
      const notifications = d.notifications + (extra?.notifications ?? 0);
      const highlights = d.highlights + (extra?.highlights ?? 0);
      if (d.counted !== undefined) this.remember(key(d.roomId), { ...d.counted, notifications, highlights });
      else this.counted.delete(key(d.roomId));
      out.set(d.roomId, { notification_count: notifications, highlight_count: highlights });
    }
    return out;
  }

  /** The push context per sender; power levels are read only when an event asks for them (@room). */
  private async context(
    userId: string,
    facts: RoomFacts | undefined,
    events: readonly StoredEvent[],
  ): Promise<(sender: string) => PushContext> {
    let powerLevels: JsonObject | undefined;
    const wantsPower = events.some((e) => {
      const mentions = e.pdu.content['m.mentions'];
      return isJsonObject(mentions) && mentions['room'] === true;
    });
    if (wantsPower && facts?.snapshotNid !== undefined) {
      const state = await this.reader.stateSubsetOfSnapshot(facts.snapshotNid, 'm.room.power_levels', ['']);
      powerLevels = [...state.values()][0]?.pdu.content;
    }
    const power = senderPowerIn(powerLevels);
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
