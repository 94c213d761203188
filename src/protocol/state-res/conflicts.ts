// Splitting state sets into unconflicted and conflicted state. The two algorithms disagree on a
// key that some sets lack: v2 calls it conflicted, v1 does not.

import type { StateKey, StateMap } from '../events.js';

export interface Partition {
  /** Keys every set agrees on (v1: every set that has the key). */
  readonly unconflicted: Map<StateKey, string>;
  /** The distinct event ids of each conflicted key, in first-seen order. */
  readonly conflicted: Map<StateKey, string[]>;
}

/**
 * v2: a key is unconflicted when every set holds it with the same event; otherwise each event
 * any set holds for it belongs to the conflicted state set.
 */
export function partitionV2(sets: readonly StateMap[]): Partition {
  const unconflicted = new Map<StateKey, string>();
  const conflicted = new Map<StateKey, string[]>();
  for (const set of sets) {
    for (const [key, value] of set) {
      if (unconflicted.has(key) || conflicted.has(key)) continue;
      // Most keys of a large state agree everywhere: checked without building a set of values.
      if (sets.every((other) => other.get(key) === value)) {
        unconflicted.set(key, value);
        continue;
      }
      const values = new Set<string>();
      for (const other of sets) {
        const v = other.get(key);
        if (v !== undefined) values.add(v);
      }
      conflicted.set(key, [...values]);
    }
  }
  return { unconflicted, conflicted };
}

/** v1: a conflict is two sets holding different events for one key; absence is no conflict. */
export function partitionV1(sets: readonly StateMap[]): Partition {
  const unconflicted = new Map<StateKey, string>();
  const conflicted = new Map<StateKey, string[]>();
  for (const set of sets) {
    for (const key of set.keys()) {
      if (unconflicted.has(key) || conflicted.has(key)) continue;
      const values = new Set<string>();
      for (const other of sets) {
        const v = other.get(key);
        if (v !== undefined) values.add(v);
      }
      if (values.size === 1) unconflicted.set(key, [...values][0]!);
      else conflicted.set(key, [...values]);
    }
  }
  return { unconflicted, conflicted };
}
