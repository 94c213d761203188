// State resolution v2 (room versions 2–11) and v2.1 (v12: the conflicted state subgraph joins the
// full conflicted set, and the first iterative auth checks start from an empty state).
// Comments carry the numbers of the spec's algorithm steps.

import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../events.js';
import { powerLevelsFromEvents, userPowerLevel, type PowerLevels } from '../power-levels.js';
import type { RoomVersion } from '../room-versions.js';
import { authAncestry, authDifference } from './auth-chain.js';
import { partitionV2 } from './conflicts.js';
import { AuthGraph, YIELD_EVERY, yieldToEventLoop, type StateResEventSource } from './auth-graph.js';
import { iterativeAuthChecks } from './iterative-auth.js';
import { mainlineOrder } from './mainline.js';
import { lexicographicalTopologicalSort, type PowerSortKey } from './ordering.js';

const CREATE = 'm.room.create';
const POWER_LEVELS = 'm.room.power_levels';
const JOIN_RULES = 'm.room.join_rules';
const MEMBER = 'm.room.member';
const POWER_LEVELS_KEY = stateKey(POWER_LEVELS, '');

/**
 * A power event: one that might remove someone's ability to do something. Power levels, join
 * rules and the create event (each with an empty state key), and kicks and bans: a leave or ban
 * membership whose sender is not its target.
 */
export function isPowerEvent(ev: RoomEvent): boolean {
  if (ev.state_key === '' && (ev.type === POWER_LEVELS || ev.type === JOIN_RULES || ev.type === CREATE)) {
    return true;
  }
  if (ev.type !== MEMBER || ev.state_key === undefined) return false;
  const membership = ev.content.membership;
  return (membership === 'leave' || membership === 'ban') && ev.sender !== ev.state_key;
}

/**
 * The sender's power level as the event's own auth events give it: from the power levels among
 * them, or without one, 100 for the room creator (per the create event among them) and 0 else.
 * From v12 the creators' level is infinite (the create event is the one the room id names).
 */
function senderPowerOf(graph: AuthGraph, version: RoomVersion): (ev: RoomEvent) => number {
  const parsed = new Map<string, PowerLevels>();
  return (ev) => {
    const pl = graph.authEventOfType(ev, POWER_LEVELS);
    if (pl === undefined) {
      const create = graph.authEventOfType(ev, CREATE);
      return userPowerLevel(powerLevelsFromEvents(undefined, create, version), ev.sender);
    }
    let levels = parsed.get(pl.event_id);
    if (levels === undefined) {
      levels = powerLevelsFromEvents(pl, version.privilegedCreators ? graph.create : undefined, version);
      parsed.set(pl.event_id, levels);
    }
    return userPowerLevel(levels, ev.sender);
  };
}

/**
 * v2.1, definitions: the conflicted state subgraph, the events on some auth-event path from one
 * conflicted event to another (endpoints included): those reachable from a conflicted event that
 * also reach one.
 */
async function conflictedSubgraph(graph: AuthGraph, conflictedIds: Iterable<string>): Promise<Set<string>> {
  const starts = new Set(conflictedIds);
  await graph.load(starts);
  const ancestry = await authAncestry(graph, starts);
  // Walk back from the conflicted events along reversed auth edges, within their ancestry.
  const citedBy = new Map<string, string[]>();
  for (const [id, parents] of ancestry) {
    for (const p of parents) {
      let list = citedBy.get(p);
      if (list === undefined) citedBy.set(p, (list = []));
      list.push(id);
    }
  }
  const reaching = new Set<string>();
  const stack: string[] = [];
  for (const id of starts) if (ancestry.has(id)) {
    reaching.add(id);
    stack.push(id);
  }
  while (stack.length > 0) {
    for (const child of citedBy.get(stack.pop()!) ?? []) {
      if (!reaching.has(child)) {
        reaching.add(child);
        stack.push(child);
      }
    }
  }
  return reaching;
}

export async function resolveStateV2(
  roomId: string,
  version: RoomVersion,
  stateSets: readonly StateMap[],
  source: StateResEventSource,
): Promise<Map<StateKey, string>> {
  if (stateSets.length === 0) return new Map();
  if (stateSets.length === 1) return new Map(stateSets[0]);

  // Definitions: the unconflicted state map and the conflicted state set.
  const { unconflicted, conflicted } = partitionV2(stateSets);
  if (conflicted.size === 0) return unconflicted;
  const graph = new AuthGraph(roomId, source);

  // Definitions: the auth difference and the full conflicted set.
  const conflictedPerSet = stateSets.map((set) => {
    const ids: string[] = [];
    for (const key of conflicted.keys()) {
      const id = set.get(key);
      if (id !== undefined) ids.push(id);
    }
    return ids;
  });
  const difference = await authDifference(graph, source, [...unconflicted.values()], conflictedPerSet);
  const fullIds = new Set<string>(difference);
  for (const ids of conflicted.values()) for (const id of ids) fullIds.add(id);
  const v21 = version.stateResolution === 'v2.1';
  if (v21) {
    // v2.1: the full conflicted set also takes the conflicted state subgraph.
    for (const id of await conflictedSubgraph(graph, [...conflicted.values()].flat())) fullIds.add(id);
    await graph.loadCreate(version);
  }
  await graph.load(fullIds);
  // Events the source cannot supply cannot be authorized, so they take no part.
  const full = new Set<string>();
  for (const id of fullIds) if (graph.get(id)?.state_key !== undefined) full.add(id);

  // 1. X: the power events of the full conflicted set, with the events of their auth chains that
  //    are in the full conflicted set, sorted by the reverse topological power ordering.
  const powerEvents: string[] = [];
  for (const id of full) if (isPowerEvent(graph.require(id))) powerEvents.push(id);
  const ancestry = await authAncestry(graph, powerEvents);
  const x = new Set<string>();
  for (const id of ancestry.keys()) if (full.has(id)) x.add(id);
  const senderPower = senderPowerOf(graph, version);
  const keys = new Map<string, PowerSortKey>();
  let steps = 0;
  for (const id of x) {
    if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
    const ev = graph.require(id);
    keys.set(id, { id, power: senderPower(ev), ts: ev.origin_server_ts });
  }
  const sortedPower = await lexicographicalTopologicalSort(ancestry, x, (id) => keys.get(id)!);

  // 2. Iterative auth checks from the unconflicted state (v2.1: from an empty state) over X: the
  //    partially resolved state.
  const partial = await iterativeAuthChecks(graph, version, sortedPower, v21 ? new Map() : unconflicted);

  // 3. Every other event of the full conflicted set (including any power event an auth cycle
  //    kept out of step 1), by mainline ordering based on the partial state's power levels.
  const picked = new Set(sortedPower);
  const remaining: string[] = [];
  for (const id of full) if (!picked.has(id)) remaining.push(id);
  const ordered = await mainlineOrder(graph, remaining, partial.get(POWER_LEVELS_KEY));

  // 4. Iterative auth checks from the partial state over those events.
  const resolved = await iterativeAuthChecks(graph, version, ordered, partial);

  // 5. The unconflicted state map overrides whatever the checks put in its keys.
  for (const [key, id] of unconflicted) resolved.set(key, id);
  return resolved;
}
