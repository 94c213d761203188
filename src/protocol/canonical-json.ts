// Canonical JSON (spec appendices, "Canonical JSON"): the shortest UTF-8 JSON encoding, object keys
// sorted by Unicode code point, non-ASCII characters unescaped, control characters escaped as JSON
// requires (\b \f \n \r \t, else \u00xx), integers only, within ±(2^53 − 1).

import { HearthError } from './errors.js';

export interface CanonicalJsonOptions {
  /**
   * Room versions 6 and later (and everything outside events) require integers within
   * ±(2^53 − 1) and no floats. Older room versions may carry other numbers: with `strict: false`
   * they are written as JavaScript formats them rather than rejected.
   */
  strict?: boolean;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 − 1
const SURROGATE = /[\ud800-\udfff]/;

/** Compares by Unicode code point; UTF-16 order differs only when a surrogate is involved. */
function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx - cy;
  }
}

function encodeString(s: string): string {
  // A lone surrogate has no UTF-8 encoding, so no canonical form.
  if (!s.isWellFormed()) throw HearthError.badJson('String contains a lone UTF-16 surrogate');
  // JSON.stringify's string escaping is exactly the spec's for well-formed strings.
  return JSON.stringify(s);
}

function encodeNumber(n: number, strict: boolean): string {
  if (!Number.isFinite(n)) throw HearthError.badJson('Numbers must be finite');
  if (Number.isInteger(n)) {
    if (strict && (n > MAX_SAFE || n < -MAX_SAFE)) {
      throw HearthError.badJson(`Integer out of canonical JSON range: ${n}`);
    }
    // -0 is written as 0 (the spec forbids "-0"); large integers without exponent.
    if (Math.abs(n) < 1e21) return n === 0 ? '0' : String(n);
    return BigInt(n).toString();
  }
  if (strict) throw HearthError.badJson(`Floats are not allowed in canonical JSON: ${n}`);
  return String(n);
}

function encode(value: unknown, strict: boolean): string {
  switch (typeof value) {
    case 'string':
      return encodeString(value);
    case 'number':
      return encodeNumber(value, strict);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ',';
          const item: unknown = value[i];
          out += item === undefined ? 'null' : encode(item, strict);
        }
        return out + ']';
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      keys.sort();
      for (const k of keys) {
        if (SURROGATE.test(k)) {
          keys.sort(compareCodePoints);
          break;
        }
      }
      let out = '{';
      let first = true;
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        if (!first) out += ',';
        first = false;
        out += encodeString(k) + ':' + encode(v, strict);
      }
      return out + '}';
    }
    default:
      throw HearthError.badJson(`Cannot encode a ${typeof value} as JSON`);
  }
}

/** The canonical JSON text of `value`. Throws HearthError M_BAD_JSON for values it cannot encode. */
export function canonicalJson(value: unknown, options: CanonicalJsonOptions = {}): string {
  return encode(value, options.strict ?? true);
}

/** The canonical JSON of `value` as UTF-8 bytes (what is signed and hashed). */
export function canonicalJsonBytes(value: unknown, options: CanonicalJsonOptions = {}): Buffer {
  return Buffer.from(canonicalJson(value, options), 'utf8');
}
