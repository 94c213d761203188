// State resolution v1 (room version 1). The spec's prose leaves some points open; where it does,
// this follows what servers have long done, so that rooms keep converging with them:
// - A key only some sets hold is not a conflict ("different event_ids for the same key").
// - R for the checks is the unconflicted state; each conflicted key is resolved on its own, and
//   R is updated with a whole pass's results (power levels, then join rules, then memberships)
//   only once that pass is done, so one member key's outcome does not feed another's.
// - A conflicted event the source cannot supply drops out; a key left with one event takes it.
// - Other events: when none passes the checks, the last in the order (least depth) is taken.

import { createHash } from 'node:crypto';
import { authTypesForEvent } from '../auth-events.js';
import { checkEventAuth } from '../event-auth.js';
import { parseStateKey, stateKey, type RoomEvent, type StateKey, type StateMap } from '../events.js';
import type { RoomVersion } from '../room-versions.js';
import { partitionV1 } from './conflicts.js';
import { AuthGraph, YIELD_EVERY, yieldToEventLoop, type StateResEventSource } from './auth-graph.js';

const POWER_LEVELS_KEY = stateKey('m.room.power_levels', '');

interface Ranked {
  readonly ev: RoomEvent;
  readonly sha1: string;
}

function rank(ev: RoomEvent): Ranked {
  return { ev, sha1: createHash('sha1').update(ev.event_id, 'utf8').digest('hex') };
}

/** Ascending depth, then descending sha1(event_id): the order auth events are tried in. */
function byDepthAscShaDesc(a: Ranked, b: Ranked): number {
  if (a.ev.depth !== b.ev.depth) return a.ev.depth - b.ev.depth;
  return a.sha1 < b.sha1 ? 1 : a.sha1 > b.sha1 ? -1 : 0;
}

function allowedIn(
  ev: RoomEvent,
  state: ReadonlyMap<StateKey, RoomEvent>,
  version: RoomVersion,
): boolean {
  const authState = new Map<StateKey, RoomEvent>();
  for (const k of authTypesForEvent(ev, version)) {
    const a = state.get(k);
    if (a !== undefined) authState.set(k, a);
  }
  return checkEventAuth(ev, authState, version).allowed;
}

/**
 * One conflicted key of power levels, join rules or a membership: take the first event of the
 * list, then each next one while the rules allow it in R updated with the previous one.
 */
function resolveAuthKey(
  events: readonly Ranked[],
  r: ReadonlyMap<StateKey, RoomEvent>,
  version: RoomVersion,
): RoomEvent {
  const list = [...events].sort(byDepthAscShaDesc);
  let accepted = list[0]!.ev;
  const state = new Map(r);
  for (const { ev } of list.slice(1)) {
    state.set(stateKey(accepted.type, accepted.state_key!), accepted);
    if (!allowedIn(ev, state, version)) break;
    accepted = ev;
  }
  return accepted;
}

/** Any other conflicted key: the event of highest depth, lowest sha1(event_id), that passes in R. */
function resolveOtherKey(
  events: readonly Ranked[],
  r: ReadonlyMap<StateKey, RoomEvent>,
  version: RoomVersion,
): RoomEvent {
  const list = [...events].sort((a, b) => byDepthAscShaDesc(b, a));
  for (const { ev } of list) if (allowedIn(ev, r, version)) return ev;
  return list[list.length - 1]!.ev;
}

export async function resolveStateV1(
  roomId: string,
  version: RoomVersion,
  stateSets: readonly StateMap[],
  source: StateResEventSource,
): Promise<Map<StateKey, string>> {
  if (stateSets.length === 0) return new Map();
  if (stateSets.length === 1) return new Map(stateSets[0]);

  // Start with R: the union of the states, without the conflicting events.
  const { unconflicted, conflicted } = partitionV1(stateSets);
  if (conflicted.size === 0) return unconflicted;
  const graph = new AuthGraph(roomId, source);
  const all: string[] = [];
  for (const ids of conflicted.values()) all.push(...ids);
  await graph.load(all);

  const result = new Map(unconflicted);
  const conflicts = new Map<StateKey, Ranked[]>();
  const neededFromR: string[] = [];
  for (const [key, ids] of conflicted) {
    const events: Ranked[] = [];
    for (const id of ids) {
      const ev = graph.get(id);
      if (ev?.state_key !== undefined) events.push(rank(ev));
    }
    if (events.length === 1) result.set(key, events[0]!.ev.event_id);
    if (events.length < 2) continue;
    conflicts.set(key, events);
    for (const { ev } of events) {
      for (const k of authTypesForEvent(ev, version)) {
        const id = unconflicted.get(k);
        if (id !== undefined) neededFromR.push(id);
      }
    }
  }
  await graph.load(neededFromR);
  const r = new Map<StateKey, RoomEvent>();
  for (const [key, id] of unconflicted) {
    const ev = graph.get(id);
    if (ev !== undefined) r.set(key, ev);
  }

  const resolved = new Map<StateKey, RoomEvent>();
  let steps = 0;
  const pass = async (
    select: (key: StateKey) => boolean,
    resolve: typeof resolveAuthKey,
  ): Promise<void> => {
    const passResults: [StateKey, RoomEvent][] = [];
    for (const [key, events] of conflicts) {
      if (resolved.has(key) || !select(key)) continue;
      if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
      passResults.push([key, resolve(events, r, version)]);
    }
    for (const [key, ev] of passResults) {
      resolved.set(key, ev);
      r.set(key, ev);
    }
  };
  const typeIs = (type: string) => (key: StateKey) => parseStateKey(key).type === type;

  // First the power levels, then the join rules, then the memberships.
  await pass((key) => key === POWER_LEVELS_KEY, resolveAuthKey);
  await pass(typeIs('m.room.join_rules'), resolveAuthKey);
  await pass(typeIs('m.room.member'), resolveAuthKey);
  // No other events affect the authorization rules.
  await pass(() => true, resolveOtherKey);

  for (const [key, ev] of resolved) result.set(key, ev.event_id);
  return result;
}
