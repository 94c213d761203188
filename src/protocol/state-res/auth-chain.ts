// Auth chains: the events reachable from an event through `auth_events` links. They are walked
// breadth first, one fetch per level, with a shared visited set, so a union of many chains costs
// what the union holds rather than the sum of the chains.

import { AuthGraph, YIELD_EVERY, yieldToEventLoop, type StateResEventSource } from './auth-graph.js';

/**
 * The union of the auth chains of `startIds`. A start event is in the result only if another
 * start event's chain reaches it. Ids that cannot be fetched are included but not walked.
 * Ids in `skip` are neither included nor walked through (used when their whole chain is known
 * to be excluded anyway).
 */
export async function authChainUnion(
  graph: AuthGraph,
  startIds: Iterable<string>,
  skip?: ReadonlySet<string>,
): Promise<Set<string>> {
  const visited = new Set<string>();
  let level = [...new Set(startIds)];
  let steps = 0;
  while (level.length > 0) {
    await graph.load(level);
    const next: string[] = [];
    for (const id of level) {
      if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
      const ev = graph.get(id);
      if (ev === undefined) continue;
      for (const a of ev.auth_events) {
        if (visited.has(a) || skip?.has(a)) continue;
        visited.add(a);
        next.push(a);
      }
    }
    level = next;
  }
  return visited;
}

/**
 * The ancestry of `startIds` through auth events: every loaded event reachable from them
 * (including themselves) mapped to its distinct auth events that are loaded.
 */
export async function authAncestry(
  graph: AuthGraph,
  startIds: Iterable<string>,
): Promise<Map<string, string[]>> {
  const ancestry = new Map<string, string[]>();
  let level: string[] = [];
  for (const id of new Set(startIds)) if (graph.get(id) !== undefined) level.push(id);
  for (const id of level) ancestry.set(id, []);
  let steps = 0;
  while (level.length > 0) {
    await graph.loadAuthEvents(level);
    const next: string[] = [];
    for (const id of level) {
      if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
      const parents = new Set<string>();
      for (const a of graph.require(id).auth_events) {
        if (graph.get(a) === undefined) continue;
        parents.add(a);
        if (!ancestry.has(a)) {
          ancestry.set(a, []);
          next.push(a);
        }
      }
      ancestry.set(id, [...parents]);
    }
    level = next;
  }
  return ancestry;
}

/**
 * The auth difference of the state sets: the union of their full auth chains minus the
 * intersection. A set's full auth chain counts the set's own events too, as the reference server
 * (Synapse) computes it; the spec's wording leaves them out, but every server in a room must agree.
 * Every set holds the unconflicted state, so with U the unconflicted events and their chain, and
 * D_i set i's conflicted events and their chain, the full chain of set i is U ∪ D_i and the
 * difference is (∪D_i − ∩D_i) − U. That lets each D_i walk stop at U.
 */
export async function authDifference(
  graph: AuthGraph,
  source: StateResEventSource,
  unconflictedIds: readonly string[],
  conflictedIdsPerSet: readonly (readonly string[])[],
): Promise<Set<string>> {
  const common = new Set<string>(
    source.getAuthChain !== undefined
      ? await source.getAuthChain(unconflictedIds)
      : await authChainUnion(graph, unconflictedIds),
  );
  for (const id of unconflictedIds) common.add(id);
  const perSet: Set<string>[] = [];
  for (const ids of conflictedIdsPerSet) {
    const chain = new Set<string>(
      source.getAuthChain !== undefined
        ? await source.getAuthChain(ids)
        : await authChainUnion(graph, ids, common),
    );
    for (const id of ids) chain.add(id);
    perSet.push(chain);
  }
  const counts = new Map<string, number>();
  for (const chain of perSet) {
    for (const id of chain) {
      if (!common.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  const difference = new Set<string>();
  for (const [id, n] of counts) if (n < perSet.length) difference.add(id);
  return difference;
}
