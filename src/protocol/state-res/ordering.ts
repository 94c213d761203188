// Orderings shared by the resolution algorithms: a binary heap, and Kahn's algorithm with a
// priority queue for the reverse topological power ordering.

import { compareCodePoints } from '../code-points.js';
import { YIELD_EVERY, yieldToEventLoop } from './auth-graph.js';

export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.less(items[l]!, items[m]!)) m = l;
        if (r < items.length && this.less(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** The tie-break key of the reverse topological power ordering. */
export interface PowerSortKey {
  readonly id: string;
  readonly power: number;
  readonly ts: number;
}

/** x < y: greater sender power, then earlier origin_server_ts, then smaller event_id. */
export function powerKeyLess(x: PowerSortKey, y: PowerSortKey): boolean {
  if (x.power !== y.power) return x.power > y.power;
  if (x.ts !== y.ts) return x.ts < y.ts;
  return compareCodePoints(x.id, y.id) < 0;
}

/**
 * The lexicographically smallest topological ordering of `members` (earliest first) under the
 * DAG of auth events. `graph` maps every event of the members' auth ancestry to its auth events;
 * events of the ancestry that are not members only carry the order between members (an auth
 * path through them still orders its ends), so they are released as soon as they are free and
 * are not output. Members on an auth cycle never become free and are left out.
 */
export async function lexicographicalTopologicalSort(
  graph: ReadonlyMap<string, readonly string[]>,
  members: ReadonlySet<string>,
  keyOf: (id: string) => PowerSortKey,
): Promise<string[]> {
  const waiting = new Map<string, number>();
  const children = new Map<string, string[]>();
  for (const [id, parents] of graph) {
    waiting.set(id, parents.length);
    for (const p of parents) {
      const list = children.get(p);
      if (list === undefined) children.set(p, [id]);
      else list.push(id);
    }
  }
  const ready = new MinHeap<PowerSortKey>(powerKeyLess);
  const free: string[] = [];
  const admit = (id: string): void => {
    if (members.has(id)) ready.push(keyOf(id));
    else free.push(id);
  };
  for (const [id, n] of waiting) if (n === 0) admit(id);
  const release = (id: string): void => {
    for (const c of children.get(id) ?? []) {
      const n = waiting.get(c)! - 1;
      waiting.set(c, n);
      if (n === 0) admit(c);
    }
  };

  const out: string[] = [];
  let steps = 0;
  for (;;) {
    while (free.length > 0) release(free.pop()!);
    const next = ready.pop();
    if (next === undefined) break;
    out.push(next.id);
    release(next.id);
    if (++steps % YIELD_EVERY === 0) await yieldToEventLoop();
  }
  return out;
}
