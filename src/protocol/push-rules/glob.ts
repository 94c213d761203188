// Glob matching for push rules (appendices, "Glob-style matching"): `*` matches zero or more
// characters, `?` exactly one, anything else itself; characters are code points compared after
// per-character lower-casing.
//
// A pattern compiles to a list of positions and matching walks the set of positions reachable so
// far, one input character at a time (an NFA simulation). Time is O(value length × pattern
// length) at worst and memory O(pattern length), whatever the pattern: there is no backtracking,
// so `*a*a*a*a*a*b` against a long run of `a` stays cheap.

import { BoundedCache } from './bounded-cache.js';

const STAR = -1;
const ANY = -2;
const END = -3;

/** A compiled pattern. Matching reuses scratch buffers, so it is synchronous and not reentrant. */
export class Glob {
  /** Tokens per position: STAR, ANY, or a lower-cased code point; END closes the list. */
  private readonly tokens: Int32Array;
  private readonly accept: number;
  private cur: Int32Array;
  private next: Int32Array;
  private readonly mark: Int32Array;
  private generation = 0;

  private constructor(tokens: number[]) {
    tokens.push(END);
    this.tokens = Int32Array.from(tokens);
    this.accept = tokens.length - 1;
    this.cur = new Int32Array(tokens.length);
    this.next = new Int32Array(tokens.length);
    this.mark = new Int32Array(tokens.length);
  }

  /** `*` and `?` are wildcards; consecutive stars are one star. */
  static pattern(pattern: string): Glob {
    const tokens: number[] = [];
    for (let i = 0; i < pattern.length; ) {
      const cp = pattern.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      if (cp === 0x2a) {
        if (tokens[tokens.length - 1] !== STAR) tokens.push(STAR);
      } else if (cp === 0x3f) {
        tokens.push(ANY);
      } else {
        tokens.push(foldCase(cp));
      }
    }
    return new Glob(tokens);
  }

  /** Every character stands for itself (a display name containing `*` is not a wildcard). */
  static literal(text: string): Glob {
    const tokens: number[] = [];
    for (let i = 0; i < text.length; ) {
      const cp = text.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      tokens.push(foldCase(cp));
    }
    return new Glob(tokens);
  }

  /** Number of positions; the weight of this glob in a cache. */
  get size(): number {
    return this.tokens.length;
  }

  /** True when the pattern matches the entire value. */
  matchesWhole(value: string): boolean {
    let gen = this.nextGeneration();
    let count = this.add(this.cur, 0, 0, gen);
    for (let i = 0; i < value.length; ) {
      const cp = value.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      gen = this.nextGeneration();
      count = this.step(count, foldCase(cp), gen);
      if (count === 0) return false;
    }
    return this.mark[this.accept] === gen;
  }

  /**
   * True when the pattern matches some substring of the value that starts and ends at a word
   * boundary: the start or end of the value, or a character other than [A-Za-z0-9_].
   */
  matchesWords(value: string): boolean {
    let gen = this.nextGeneration();
    let count = 0;
    let boundaryBefore = true;
    for (let i = 0; ; ) {
      if (boundaryBefore) count = this.add(this.cur, count, 0, gen);
      if (i >= value.length) return this.mark[this.accept] === gen;
      const cp = value.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      const wordChar = isWordChar(cp);
      if (!wordChar && this.mark[this.accept] === gen) return true;
      gen = this.nextGeneration();
      count = this.step(count, foldCase(cp), gen);
      boundaryBefore = !wordChar;
    }
  }

  /** Advances every current position over one character into `next`, then swaps the lists. */
  private step(count: number, ch: number, gen: number): number {
    const { tokens, cur, next } = this;
    let nextCount = 0;
    for (let k = 0; k < count; k++) {
      const p = cur[k]!;
      const t = tokens[p]!;
      if (t === STAR) nextCount = this.add(next, nextCount, p, gen);
      else if (t === ch || t === ANY) nextCount = this.add(next, nextCount, p + 1, gen);
    }
    this.cur = next;
    this.next = cur;
    return nextCount;
  }

  /** Adds a position and, past a star (which may match nothing), the one after it. */
  private add(list: Int32Array, count: number, p: number, gen: number): number {
    const { mark, tokens } = this;
    if (mark[p] === gen) return count;
    mark[p] = gen;
    list[count++] = p;
    // Stars never follow stars, so one extra position closes the set.
    if (tokens[p] === STAR && mark[p + 1] !== gen) {
      mark[p + 1] = gen;
      list[count++] = p + 1;
    }
    return count;
  }

  private nextGeneration(): number {
    if (this.generation === 0x7fffffff) {
      this.mark.fill(0);
      this.generation = 0;
    }
    return ++this.generation;
  }
}

/** Word characters for content.body matching, exactly as the spec lists them. */
export function isWordChar(cp: number): boolean {
  return (
    (cp >= 0x30 && cp <= 0x39) ||
    (cp >= 0x41 && cp <= 0x5a) ||
    (cp >= 0x61 && cp <= 0x7a) ||
    cp === 0x5f
  );
}

// Lower-cased BMP code points, filled on first use (stored +1 so that 0 means "not yet").
const bmpFolds = new Int32Array(0x10000);

/**
 * One code point lower-cased to one code point. The few characters whose lower case is longer
 * (U+0130) keep themselves, so that `?` still matches one character of the original value.
 */
export function foldCase(cp: number): number {
  if (cp < 0x80) return cp >= 0x41 && cp <= 0x5a ? cp + 0x20 : cp;
  if (cp < 0x10000) {
    const known = bmpFolds[cp]!;
    if (known !== 0) return known - 1;
    const folded = foldSlow(cp);
    bmpFolds[cp] = folded + 1;
    return folded;
  }
  return foldSlow(cp);
}

function foldSlow(cp: number): number {
  const lower = String.fromCodePoint(cp).toLowerCase();
  const first = lower.codePointAt(0)!;
  return lower.length === (first > 0xffff ? 2 : 1) ? first : cp;
}

// Each cache keeps at most this many compiled globs, holding at most this many positions
// together (a position costs 16 bytes); a glob larger than that is compiled but not kept.
export const GLOB_CACHE_MAX_ENTRIES = 2048;
export const GLOB_CACHE_MAX_POSITIONS = 1 << 18;

type GlobCache = BoundedCache<string, Glob>;
const patternCache: GlobCache = new BoundedCache(GLOB_CACHE_MAX_ENTRIES, GLOB_CACHE_MAX_POSITIONS);
const literalCache: GlobCache = new BoundedCache(GLOB_CACHE_MAX_ENTRIES, GLOB_CACHE_MAX_POSITIONS);

/** The compiled glob for a pattern, from the cache when it was compiled recently. */
export function compileGlob(pattern: string): Glob {
  return cached(patternCache, pattern, Glob.pattern);
}

/** The compiled literal for a text (no wildcards), cached like patterns. */
export function compileLiteral(text: string): Glob {
  return cached(literalCache, text, Glob.literal);
}

function cached(cache: GlobCache, text: string, compile: (text: string) => Glob): Glob {
  let glob = cache.get(text);
  if (glob === undefined) {
    glob = compile(text);
    cache.set(text, glob, glob.size);
  }
  return glob;
}

/** What the pattern cache holds: compiled globs, and their positions together. */
export function globCacheStats(): { entries: number; positions: number } {
  return { entries: patternCache.size, positions: patternCache.weight };
}
