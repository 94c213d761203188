// A cache bounded by entry count and by a total weight, so that a few huge entries (long patterns
// from user-defined rules) cannot hold unbounded memory. Eviction is second-chance ("clock"):
// a read only sets a flag, which keeps reads on the hot path free of Map writes, and an entry read
// since the last sweep is passed over once before it can be evicted.

interface Entry<V> {
  readonly value: V;
  readonly weight: number;
  used: boolean;
}

export class BoundedCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private totalWeight = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get weight(): number {
    return this.totalWeight;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    entry.used = true;
    return entry.value;
  }

  /** Stores the value unless it alone outweighs the whole cache; evicts old entries to make room. */
  set(key: K, value: V, weight: number): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.totalWeight -= old.weight;
    }
    if (weight > this.maxWeight || this.maxEntries < 1) return;
    // A new entry starts as used, so that a sweep it triggers does not evict it first.
    this.entries.set(key, { value, weight, used: true });
    this.totalWeight += weight;
    while (this.entries.size > this.maxEntries || this.totalWeight > this.maxWeight) {
      const [oldestKey, oldest] = this.entries.entries().next().value!;
      this.entries.delete(oldestKey);
      if (oldest.used) {
        oldest.used = false;
        this.entries.set(oldestKey, oldest);
      } else {
        this.totalWeight -= oldest.weight;
      }
    }
  }

  clear(): void {
    this.entries.clear();
    this.totalWeight = 0;
  }
}
