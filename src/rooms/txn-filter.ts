// The transaction ids of a device that no longer fit in memory as ids, kept as 32-bit fingerprints:
// "certainly never added" or "perhaps added". A new id (the usual case) needs no database lookup,
// an old one is looked up and finds its event. Unlike a Bloom filter of fixed size it grows with
// what it holds (about 5 bytes an id), and a new id is taken for an old one with a chance of only
// (ids held) / 2^32, so it never fills up; TxnIds bounds how many it holds in all.

const EMPTY = 0;
const MIN_SLOTS = 1 << 10;

/** FNV-1a over UTF-16 code units, its bits then spread (MurmurHash3's finalizer); never 0. */
function fingerprint(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h === EMPTY ? 1 : h >>> 0;
}

export class TxnFilter {
  // Open addressing with linear probing, at most three quarters full.
  private slots = new Uint32Array(MIN_SLOTS);
  private count = 0;

  /** How many distinct fingerprints it holds. */
  get size(): number {
    return this.count;
  }

  add(id: string): void {
    if ((this.count + 1) * 4 > this.slots.length * 3) this.grow();
    if (this.insert(this.slots, fingerprint(id))) this.count++;
  }

  /** False only for an id never added. */
  mightHave(id: string): boolean {
    const f = fingerprint(id);
    const mask = this.slots.length - 1;
    for (let i = f & mask; ; i = (i + 1) & mask) {
      const s = this.slots[i]!;
      if (s === f) return true;
      if (s === EMPTY) return false;
    }
  }

  /** Whether the fingerprint was new to `slots`. */
  private insert(slots: Uint32Array, f: number): boolean {
    const mask = slots.length - 1;
    for (let i = f & mask; ; i = (i + 1) & mask) {
      const s = slots[i]!;
      if (s === f) return false;
      if (s === EMPTY) {
        slots[i] = f;
        return true;
      }
    }
  }

  private grow(): void {
    const bigger = new Uint32Array(this.slots.length * 2);
    for (const f of this.slots) if (f !== EMPTY) this.insert(bigger, f);
    this.slots = bigger;
  }
}
