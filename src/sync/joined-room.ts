// rooms.join: which joined rooms the response shows (new to the client, or with events,
// ephemeral events or account data since the token), and each one's timeline, state, summary,
// ephemeral events, account data and unread counts.
//
// An incremental sync finds the rooms with new events in the events stream since its token (the
// window every sync covering that range shares), or, when that range is long, through one read
// over the user's room list: its cost follows what changed, not how many rooms the user is in.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import { encodeTimelineToken } from '../rooms/tokens.js';
import type { Schema } from '../storage/schema.js';
import { moved, type SyncPass } from './pass.js';
import type { JoinedRoomSection } from './response.js';
import { clientEventsOf, loadRoomContents, type ContentRequest, type RoomContent } from './room-content.js';
import type { JoinPlan } from './room-plans.js';
import type { SharedReads } from './shared-reads.js';
import type { LoadedTimeline } from './timeline.js';
import type { UnreadCounter } from './unread.js';

export interface JoinedRoomExtras {
  /** Per room, ephemeral events since the token. */
  readonly ephemeral: ReadonlyMap<string, JsonObject[]>;
  /** Per room, account data since the token. */
  readonly accountData: ReadonlyMap<string, JsonObject[]>;
  /** Rooms where the user's own read receipts moved since the token. */
  readonly ownReceipts: ReadonlySet<string>;
  /** When given, receives the member events of every room section shown (state, then timeline). */
  readonly memberEvents?: StoredEvent[];
}

export interface JoinedRoomDeps {
  readonly db: Kysely<Schema>;
  readonly reader: RoomReader;
  readonly unread: UnreadCounter;
  readonly shared: SharedReads;
}

/**
 * Rooms read and formatted together. Their reads are batched; what they leave behind is garbage
 * before the next chunk starts, so a 500-room initial sync peaks at a tenth of its reads.
 */
const ROOMS_PER_CHUNK = 50;

/** A timeline with nothing in it, for rooms shown only for their ephemeral events or account data. */
function quietTimeline(plan: JoinPlan): LoadedTimeline {
  return {
    events: [],
    limited: false,
    prevBatch: encodeTimelineToken(plan.range.upTo),
    scanned: [],
    coveredAfter: plan.range.after ?? 0,
    stateAtEnd: undefined,
  };
}

export async function joinedRoomSections(
  deps: JoinedRoomDeps,
  pass: SyncPass,
  joined: ReadonlyMap<string, JoinPlan>,
  extras: JoinedRoomExtras,
): Promise<Record<string, JoinedRoomSection>> {
  const { reader } = deps;
  // Rooms with events in their range: all rooms new to the client; of the others, those the
  // events stream says changed.
  const withEvents = new Set<string>();
  const known: JoinPlan[] = [];
  for (const plan of joined.values()) {
    if (plan.always) withEvents.add(plan.roomId);
    else known.push(plan);
  }
  if (known.length > 0 && pass.since !== undefined && moved(pass, 'events')) {
    const window = await pass.window();
    const changed =
      window !== undefined
        ? new Set(window.map((e) => e.roomNid))
        : await reader.roomsWithEvents(
            known.map((p) => p.roomNid),
            { after: pass.since.events, upTo: pass.upTo.events },
          );
    for (const p of known) if (changed.has(p.roomNid)) withEvents.add(p.roomId);
  }
  const shown = [...joined.values()].filter(
    (p) => withEvents.has(p.roomId) || extras.ephemeral.has(p.roomId) || extras.accountData.has(p.roomId),
  );
  if (shown.length === 0) return {};

  const out: Record<string, JoinedRoomSection> = {};
  for (let i = 0; i < shown.length; i += ROOMS_PER_CHUNK) {
    await sectionsOf(deps, pass, shown.slice(i, i + ROOMS_PER_CHUNK), withEvents, extras, out);
  }
  return out;
}

/** The sections of one chunk of rooms, added to `out`. */
async function sectionsOf(
  deps: JoinedRoomDeps,
  pass: SyncPass,
  shown: readonly JoinPlan[],
  withEvents: ReadonlySet<string>,
  extras: JoinedRoomExtras,
  out: Record<string, JoinedRoomSection>,
): Promise<void> {
  const { db, reader } = deps;
  const facts = await deps.shared.roomFacts(shown, pass.upTo.events);
  const requests: ContentRequest[] = shown
    .filter((p) => withEvents.has(p.roomId))
    .map((p) => ({
      roomId: p.roomId,
      roomNid: p.roomNid,
      range: p.range,
      fullState: p.fullState,
      visibleFrom: p.joinedFrom,
      // A room new to the client in an incremental sync: its timeline starts at the room's start.
      newlyJoined: pass.since !== undefined && p.range.after === undefined,
    }));
  const contents = await loadRoomContents(db, reader, deps.shared, pass, requests, { facts });
  const ignored = await pass.ignored();
  const unread = await deps.unread.counts(
    pass.userId,
    shown.map((p) => ({
      roomId: p.roomId,
      roomNid: p.roomNid,
      joinedFrom: p.joinedFrom,
      upTo: p.range.upTo,
      // A room without events in its range has a quiet timeline: nothing to count since the token.
      timeline: contents.get(p.roomId)?.timeline ?? quietTimeline(p),
    })),
    facts,
    ignored,
    { since: pass.since?.receipts, upTo: pass.upTo.receipts, ownMoved: extras.ownReceipts },
  );

  // The sections' events are formatted together: their bundled aggregations are read once for
  // the chunk, not once per room.
  const sections: { plan: JoinPlan; content: RoomContent | undefined; timeline: LoadedTimeline; state: readonly StoredEvent[]; ephemeral: JsonObject[]; accountData: JsonObject[] }[] = [];
  for (const plan of shown) {
    const content = contents.get(plan.roomId);
    const timeline = content?.timeline ?? quietTimeline(plan);
    const state = content?.state ?? [];
    const ephemeral = extras.ephemeral.get(plan.roomId) ?? [];
    const accountData = extras.accountData.get(plan.roomId) ?? [];
    // A room whose news the filter removed entirely is left out.
    if (!plan.always && timeline.events.length === 0 && state.length === 0 && ephemeral.length === 0 && accountData.length === 0) continue;
    sections.push({ plan, content, timeline, state, ephemeral, accountData });
  }
  const formatted = await clientEventsOf(reader, pass, sections.flatMap((x) => [...x.state, ...x.timeline.events]));
  let at = 0;
  for (const { plan, content, timeline, state, ephemeral, accountData } of sections) {
    if (extras.memberEvents !== undefined) {
      for (const e of [...state, ...timeline.events]) if (e.type === 'm.room.member') extras.memberEvents.push(e);
    }
    const stateEvents = formatted.slice(at, (at += state.length));
    const timelineEvents = formatted.slice(at, (at += timeline.events.length));
    out[plan.roomId] = {
      summary: content?.summary ?? {},
      state: { events: stateEvents },
      timeline: { events: timelineEvents, limited: timeline.limited, prev_batch: timeline.prevBatch },
      ephemeral: { events: ephemeral },
      account_data: { events: accountData },
      unread_notifications: { notification_count: 0, highlight_count: 0 },
    };
    const counts = unread.get(plan.roomId);
    if (counts !== undefined) {
      // Asked for per thread: the room's counts are the main timeline's, the threads' apart.
      if (!pass.filter.timeline.unreadThreadNotifications) out[plan.roomId]!.unread_notifications = counts.total;
      else {
        out[plan.roomId]!.unread_notifications = counts.main;
        if (counts.threads.size > 0) out[plan.roomId]!.unread_thread_notifications = Object.fromEntries(counts.threads);
      }
    }
  }
}
