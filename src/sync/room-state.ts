// The `state` section of a room: the state at the start of the timeline that the client does not
// have yet. For a room new to the client, all of it (read for every such room in one batch); for
// a room whose timeline is limited, what changed in the gap between the token and the timeline;
// otherwise nothing. With lazy-loaded members, member events only of the timeline's senders (and
// the user and heroes when the room is new), except that members changed in a gap are always sent.

import type { Kysely } from 'kysely';
import { parseStateKey } from '../protocol/events.js';
import type { RoomReader } from '../rooms/reader.js';
import { byStreamOrder, positionOf, type StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import { readSnapshots } from '../storage/sync/snapshots.js';
import { stateKeysChangedInRange, type PositionRange } from '../storage/sync/events.js';
import type { SyncPass } from './pass.js';
import type { LoadedTimeline } from './timeline.js';

const MEMBER = 'm.room.member';

export interface StateRequest {
  readonly roomId: string;
  readonly roomNid: number;
  readonly range: PositionRange;
  readonly timeline: LoadedTimeline;
  readonly fullState: boolean;
  /** The snapshot at the range's end, when the timeline read held no event. */
  readonly stateAtEnd: number | undefined;
}

export interface Gap {
  /** The state keys (type → state keys) changed between the token and the timeline's start. */
  readonly keys: Map<string, string[]>;
}

/** The snapshot holding the state at the start of the room's timeline. */
function snapshotAtStart(r: StateRequest): number | undefined {
  return r.timeline.events[0]?.stateBeforeNid ?? r.timeline.stateAtEnd ?? r.stateAtEnd;
}

/** What changed in the gap of each limited room that is not new to the client. */
export async function gapsOf(db: Kysely<Schema>, requests: readonly StateRequest[]): Promise<Map<string, Gap>> {
  const out = new Map<string, Gap>();
  for (const r of requests) {
    if (r.fullState || !r.timeline.limited) continue;
    const first = r.timeline.events[0];
    const gap = { ...(r.range.after !== undefined ? { after: r.range.after } : {}), upTo: first !== undefined ? positionOf(first) - 1 : r.range.upTo };
    const keys = new Map<string, string[]>();
    for (const k of await stateKeysChangedInRange(db, r.roomNid, gap)) {
      let list = keys.get(k.type);
      if (!list) keys.set(k.type, (list = []));
      list.push(k.stateKey);
    }
    out.set(r.roomId, { keys });
  }
  return out;
}

/**
 * The state section of each room. `lazyMembers` (lazy loading on) names per room the users whose
 * member events the client needs beyond those changed in a gap.
 */
export async function loadRoomStates(
  db: Kysely<Schema>,
  reader: RoomReader,
  pass: SyncPass,
  requests: readonly StateRequest[],
  gaps: ReadonlyMap<string, Gap>,
  lazyMembers: ReadonlyMap<string, ReadonlySet<string>> | undefined,
): Promise<Map<string, StoredEvent[]>> {
  const picked = new Map<string, number[]>();

  // Rooms new to the client: whole snapshots, in one batch.
  const full = requests.filter((r) => r.fullState);
  const fullSnapshots = new Map<string, number>();
  for (const r of full) {
    const nid = snapshotAtStart(r);
    if (nid !== undefined) fullSnapshots.set(r.roomId, nid);
  }
  const memberUnion = lazyMembers === undefined ? undefined : [...new Set(full.flatMap((r) => [...(lazyMembers.get(r.roomId) ?? [])]))];
  const states = await readSnapshots(db, [...fullSnapshots.values()], memberUnion);
  for (const r of full) {
    const nid = fullSnapshots.get(r.roomId);
    const state = nid === undefined ? undefined : states.get(nid);
    if (state === undefined) continue;
    const members = lazyMembers?.get(r.roomId);
    const nids: number[] = [];
    for (const [key, eventNid] of state) {
      if (members !== undefined) {
        const { type, stateKey } = parseStateKey(key);
        if (type === MEMBER && !members.has(stateKey)) continue;
      }
      nids.push(eventNid);
    }
    picked.set(r.roomId, nids);
  }

  // Rooms the client has: what changed in a gap, and lazily loaded members.
  for (const r of requests) {
    if (r.fullState) continue;
    const gap = gaps.get(r.roomId);
    const members = lazyMembers?.get(r.roomId);
    if (gap === undefined && members === undefined) continue;
    const snapshot = snapshotAtStart(r);
    if (snapshot === undefined) continue;
    const wanted = new Map<string, Set<string>>();
    for (const [type, keys] of gap?.keys ?? []) wanted.set(type, new Set(keys));
    if (members !== undefined && members.size > 0) {
      const set = wanted.get(MEMBER) ?? new Set<string>();
      for (const m of members) set.add(m);
      wanted.set(MEMBER, set);
    }
    const nids: number[] = [];
    for (const [type, keys] of wanted) {
      const subset = await reader.stateSubsetOfSnapshot(snapshot, type, [...keys]);
      for (const e of subset.values()) nids.push(e.nid);
    }
    picked.set(r.roomId, nids);
  }

  const events = await reader.eventsByNids([...picked.values()].flat());
  const out = new Map<string, StoredEvent[]>();
  for (const r of requests) {
    const inTimeline = new Set(r.timeline.events.map((e) => e.eventId));
    const list: StoredEvent[] = [];
    for (const nid of picked.get(r.roomId) ?? []) {
      const e = events.get(nid);
      if (e === undefined || inTimeline.has(e.eventId)) continue;
      if (!pass.filter.state.matches({ type: e.type, sender: e.sender, room_id: e.roomId })) continue;
      list.push(e);
    }
    // A stable order: by position in the room.
    list.sort(byStreamOrder);
    out.set(r.roomId, list);
  }
  return out;
}
