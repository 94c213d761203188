// Mainline ordering (state resolution v2): events ordered by how early in the resolved power
// levels' history their own power levels sit, then by origin_server_ts, then by event_id.

import { AuthGraph, YIELD_EVERY, yieldToEventLoop } from './auth-graph.js';
import { compareCodePoints } from '../code-points.js';

const POWER_LEVELS = 'm.room.power_levels';

/** The mainline of P0: [P0, P1, …, Pn], each P(i+1) the power levels among P(i)'s auth events. */
async function mainlineOf(graph: AuthGraph, p0: string): Promise<string[]> {
  const mainline: string[] = [];
  const seen = new Set<string>();
  let current: string | undefined = p0;
  while (current !== undefined && !seen.has(current)) {
    await graph.load([current]);
    const ev = graph.get(current);
    if (ev === undefined) break;
    seen.add(current);
    mainline.push(current);
    await graph.loadAuthEvents([current]);
    current = graph.authEventOfType(ev, POWER_LEVELS)?.event_id;
    if (mainline.length % YIELD_EVERY === 0) await yieldToEventLoop();
  }
  return mainline;
}

/**
 * Mainline positions of the power-levels events reachable from `starts` through power-levels
 * auth events. The position of a power-levels event that is itself on the mainline is its index;
 * otherwise it is that of the power levels among its auth events, or ∞ if there is none.
 * Chains are walked one level per fetch for all starts together, and memoized.
 */
async function positionsOf(
  graph: AuthGraph,
  starts: readonly string[],
  index: ReadonlyMap<string, number>,
): Promise<Map<string, number>> {
  const parent = new Map<string, string | undefined>();
  let level = [...new Set(starts)].filter((id) => !index.has(id));
  while (level.length > 0) {
    await graph.load(level);
    await graph.loadAuthEvents(level);
    const next: string[] = [];
    for (const id of level) {
      if (parent.has(id)) continue;
      const ev = graph.get(id);
      const up = ev === undefined ? undefined : graph.authEventOfType(ev, POWER_LEVELS)?.event_id;
      parent.set(id, up);
      if (up !== undefined && !index.has(up) && !parent.has(up)) next.push(up);
    }
    level = next;
  }
  const position = new Map<string, number>(index);
  for (const start of parent.keys()) {
    // Follow the chain to the first resolved position, then fill in the path walked.
    const path: string[] = [];
    let id: string | undefined = start;
    let pos = Infinity;
    const onPath = new Set<string>();
    while (id !== undefined) {
      const known = position.get(id);
      if (known !== undefined) {
        pos = known;
        break;
      }
      if (onPath.has(id)) break; // an auth cycle: no mainline event is reached
      onPath.add(id);
      path.push(id);
      id = parent.get(id);
    }
    for (const p of path) position.set(p, pos);
  }
  return position;
}

/**
 * The mainline ordering of `eventIds` (all loaded) based on the power-levels event `resolvedPl`
 * (none: every position is ∞). Smallest first: a greater mainline position (power levels further
 * back in the mainline) sorts earlier, then earlier origin_server_ts, then smaller event_id.
 */
export async function mainlineOrder(
  graph: AuthGraph,
  eventIds: readonly string[],
  resolvedPl: string | undefined,
): Promise<string[]> {
  if (eventIds.length === 0) return [];
  const mainline = resolvedPl === undefined ? [] : await mainlineOf(graph, resolvedPl);
  const index = new Map<string, number>();
  mainline.forEach((id, i) => index.set(id, i));

  // e1 of each event: the power levels among its auth events (e0 itself is not considered).
  await graph.loadAuthEvents(eventIds);
  const firstPl = new Map<string, string | undefined>();
  for (const id of eventIds) {
    firstPl.set(id, graph.authEventOfType(graph.require(id), POWER_LEVELS)?.event_id);
  }
  const starts: string[] = [];
  for (const pl of firstPl.values()) if (pl !== undefined) starts.push(pl);
  const position = await positionsOf(graph, starts, index);

  const keyed = eventIds.map((id) => {
    const pl = firstPl.get(id);
    return {
      id,
      pos: pl === undefined ? Infinity : (position.get(pl) ?? Infinity),
      ts: graph.require(id).origin_server_ts,
    };
  });
  if (keyed.length > YIELD_EVERY) await yieldToEventLoop();
  keyed.sort((x, y) => {
    if (x.pos !== y.pos) return x.pos > y.pos ? -1 : 1;
    if (x.ts !== y.ts) return x.ts - y.ts;
    return compareCodePoints(x.id, y.id);
  });
  return keyed.map((k) => k.id);
}
