// What joined and left rooms share: the timeline, the state before it and (for joined rooms) the
// summary, read for every room of the response in batches, then turned into client events.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import type { StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import type { PositionRange } from '../storage/sync/events.js';
import { projectFields, type SyncPass } from './pass.js';
import type { SharedReads } from './shared-reads.js';
import type { RoomSummaryFields } from './response.js';
import { gapsOf, loadRoomStates, type StateRequest } from './room-state.js';
import { roomSummaries, type RoomFacts } from './summary.js';
import { loadTimelines, statesAtEnd, type LoadedTimeline, type TimelineRequest } from './timeline.js';

const MEMBER = 'm.room.member';

export interface ContentRequest {
  readonly roomId: string;
  readonly roomNid: number;
  readonly range: PositionRange;
  /** All state at the timeline's start (the room is new to the client). */
  readonly fullState: boolean;
  /** No state at all (a room the user never joined: a rejected invite ...). */
  readonly stateless?: boolean;
  /** Events at or after this position need no history-visibility check. */
  readonly visibleFrom: number | undefined;
  /** Joined since the token of an incremental sync (see TimelineRequest). */
  readonly newlyJoined?: boolean;
}

export interface RoomContent {
  readonly timeline: LoadedTimeline;
  readonly state: StoredEvent[];
  /** Set when the room is new to the client or its membership changed. */
  readonly summary: RoomSummaryFields | undefined;
}

export interface ContentOptions {
  /** Room facts for summaries; without them no summary is computed. */
  readonly facts?: ReadonlyMap<string, RoomFacts>;
}

export async function loadRoomContents(
  db: Kysely<Schema>,
  reader: RoomReader,
  shared: SharedReads,
  pass: SyncPass,
  requests: readonly ContentRequest[],
  options: ContentOptions = {},
): Promise<Map<string, RoomContent>> {
  const out = new Map<string, RoomContent>();
  if (requests.length === 0) return out;
  const timelineRequests: TimelineRequest[] = requests.map((r) => ({
    roomId: r.roomId,
    roomNid: r.roomNid,
    range: r.range,
    visibleFrom: r.visibleFrom,
    ...(r.newlyJoined === true ? { newlyJoined: true } : {}),
  }));
  const timelines = await loadTimelines(db, reader, shared, pass, timelineRequests);

  const stated = requests.filter((r) => r.stateless !== true);
  // Rooms shown whole whose range held no event: their state comes from the last event before it.
  const bare = stated.filter((r) => r.fullState && timelines.get(r.roomId)!.scanned.length === 0);
  const ends = await statesAtEnd(db, bare.map((r) => ({ roomNid: r.roomNid, upTo: r.range.upTo })));
  const stateRequests: StateRequest[] = stated.map((r) => ({
    roomId: r.roomId,
    roomNid: r.roomNid,
    range: r.range,
    timeline: timelines.get(r.roomId)!,
    fullState: r.fullState,
    stateAtEnd: ends.get(r.roomNid),
  }));
  const gaps = await gapsOf(db, stateRequests);

  // Summaries: for rooms new to the client, and rooms whose membership changed.
  let summaries = new Map<string, RoomSummaryFields>();
  if (options.facts !== undefined) {
    const wanted = stated.filter(
      (r) =>
        r.fullState ||
        timelines.get(r.roomId)!.scanned.some((e) => e.type === MEMBER) ||
        (gaps.get(r.roomId)?.keys.has(MEMBER) ?? false),
    );
    summaries = await roomSummaries(db, pass.userId, wanted, options.facts);
  }

  // Lazy-loaded members: the timeline's senders; for rooms new to the client also the user and the heroes.
  let lazy: Map<string, Set<string>> | undefined;
  if (pass.filter.state.lazyLoadMembers) {
    lazy = new Map();
    for (const r of stated) {
      const members = new Set(timelines.get(r.roomId)!.events.map((e) => e.sender));
      if (r.fullState) {
        members.add(pass.userId);
        for (const hero of summaries.get(r.roomId)?.['m.heroes'] ?? []) members.add(hero);
      }
      lazy.set(r.roomId, members);
    }
  }
  const states = await loadRoomStates(db, reader, pass, stateRequests, gaps, lazy);

  const sent = pass.sentMembers;
  for (const r of requests) {
    const timeline = timelines.get(r.roomId)!;
    let state = states.get(r.roomId) ?? [];
    if (sent !== undefined) {
      // Member events the device already has are not sent again; what it gets now is remembered.
      if (pass.since !== undefined) state = state.filter((e) => e.type !== MEMBER || !sent.has(r.roomNid, e.stateKey!, e.nid));
      for (const list of [state, timeline.events]) {
        for (const e of list) if (e.type === MEMBER && e.stateKey !== undefined) sent.add(r.roomNid, e.stateKey, e.nid);
      }
    }
    out.set(r.roomId, { timeline, state, summary: summaries.get(r.roomId) });
  }
  return out;
}

/** Events as a room section serves them: client format without room_id (or the filter's federation format), event_fields applied. */
export async function clientEventsOf(reader: RoomReader, pass: SyncPass, events: readonly StoredEvent[]): Promise<JsonObject[]> {
  if (events.length === 0) return [];
  const client = await reader.clientEvents(events, {
    now: pass.now,
    viewer: { userId: pass.userId, deviceId: pass.deviceId },
    omitRoomId: true,
    format: pass.filter.eventFormat,
  });
  return client.map((e) => projectFields(pass, e as unknown as JsonObject));
}
