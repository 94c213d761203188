// A Bloom filter of transaction ids: "certainly never added" or "perhaps added". A device's ids
// that no longer fit in memory go here, so a new id (the usual case) needs no database lookup
// while an old one still finds its event there.

const BITS = 1 << 16; // 8 KiB
const HASHES = 4;
/** Past this many ids the false-positive rate passes about 2%: the filter stops being useful. */
export const TXN_FILTER_CAPACITY = 8000;

/** FNV-1a over UTF-16 code units, with a seed. */
function fnv1a(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class TxnFilter {
  private readonly bits = new Uint32Array(BITS / 32);
  private count = 0;

  /** Whether it holds as many ids as it usefully can. */
  get full(): boolean {
    return this.count >= TXN_FILTER_CAPACITY;
  }

  add(id: string): void {
    const h1 = fnv1a(id, 0);
    const h2 = fnv1a(id, 0x5bd1e995) | 1;
    for (let i = 0; i < HASHES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & (BITS - 1);
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }

  /** False only for an id never added. */
  mightHave(id: string): boolean {
    const h1 = fnv1a(id, 0);
    const h2 = fnv1a(id, 0x5bd1e995) | 1;
    for (let i = 0; i < HASHES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & (BITS - 1);
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}
