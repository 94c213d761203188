// Canonical JSON (spec appendices, "Canonical JSON"): the shortest UTF-8 JSON encoding, object keys
// sorted by Unicode code point, non-ASCII characters unescaped, control characters escaped as JSON
// requires (\b \f \n \r \t, else \u00xx), integers only, within ±(2^53 − 1).
//
// Checked byte for byte against python3-canonicaljson by test/protocol/canonical-json.test.ts.
// Written for speed: events are encoded on every hash, signature and event id.

import { compareCodePoints } from './code-points.js';
import { HearthError } from './errors.js';

export interface CanonicalJsonOptions {
  /**
   * Room versions 6 and later (and everything outside events) require integers within
   * ±(2^53 − 1) and no floats. Older room versions may carry other numbers: with `strict: false`
   * they are written rather than rejected, the way Python's canonicaljson (Synapse's) writes them,
   * so that hashes and signatures of such events check out: integers in full digits, floats as
   * Python's repr (`1.5`, `1e-05`). Lone surrogates are rejected either way: they have no UTF-8.
   */
  strict?: boolean;
}

/** What a string cannot carry between quotes as it is: a character to escape, or a surrogate. */
const NEEDS_CARE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** Up to this many keys, insertion sort beats Array.prototype.sort (most objects in events). */
const INSERTION_SORT_LIMIT = 16;

function encodeString(s: string): string {
  if (!NEEDS_CARE.test(s)) return '"' + s + '"';
  // A lone surrogate has no UTF-8 encoding, so no canonical form.
  if (!s.isWellFormed()) throw HearthError.badJson('String contains a lone UTF-16 surrogate');
  // For well-formed strings JSON.stringify escapes exactly what the spec's grammar escapes, the same
  // way: \" \\ \b \t \n \f \r, other controls as \u00xx in lower case, and nothing else.
  return JSON.stringify(s);
}

function encodeNumber(n: number, strict: boolean): string {
  // String(-0) is "0", as the spec requires.
  if (Number.isSafeInteger(n)) return String(n);
  if (!Number.isFinite(n)) throw HearthError.badJson('Numbers must be finite');
  if (Number.isInteger(n)) {
    if (strict) throw HearthError.badJson(`Integer out of canonical JSON range: ${n}`);
    // All digits, never an exponent (String(1e21) is "1e+21").
    return BigInt(n).toString();
  }
  if (strict) throw HearthError.badJson(`Floats are not allowed in canonical JSON: ${n}`);
  return pythonFloat(n);
}

/**
 * A non-integral double as Python's repr writes it. Both languages write the shortest digits that
 * read back as the same double, and agree on plain decimals from 1e-4 up (a non-integral double is
 * below 2^53, so never reaches Python's exponent threshold of 1e16). Below 1e-4 Python writes an
 * exponent of at least two digits: 1e-05 where JavaScript writes 0.00001, 1.5e-07 for 1.5e-7.
 */
function pythonFloat(n: number): string {
  if (Math.abs(n) >= 1e-4) return String(n);
  const exponentText = n.toExponential(); // shortest digits, e.g. "-1.5e-7"
  const at = exponentText.indexOf('e');
  return `${exponentText.slice(0, at)}e-${exponentText.slice(at + 2).padStart(2, '0')}`;
}

/** Sorts in place by code unit: code-point order when no key holds a surrogate. */
function sortByCodeUnit(keys: string[]): void {
  if (keys.length > INSERTION_SORT_LIMIT) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
}

function encodeObject(obj: Record<string, unknown>, strict: boolean): string {
  const keys = Object.keys(obj);
  // Usually every key is plain (nothing to escape, no surrogate): sort by code unit and quote as is.
  let plain = true;
  for (let i = 0; i < keys.length; i++) {
    if (NEEDS_CARE.test(keys[i]!)) {
      plain = false;
      break;
    }
  }
  if (plain) sortByCodeUnit(keys);
  else keys.sort(compareCodePoints);
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = obj[key];
    // As JSON.stringify: a member whose value is undefined is left out.
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += (plain ? '"' + key + '":' : encodeString(key) + ':') + encodeValue(item, strict);
  }
  return out + '}';
}

function encodeArray(array: readonly unknown[], strict: boolean): string {
  let out = '[';
  for (let i = 0; i < array.length; i++) {
    if (i > 0) out += ',';
    const item = array[i];
    // As JSON.stringify: an undefined item (or a hole) is null.
    out += item === undefined ? 'null' : encodeValue(item, strict);
  }
  return out + ']';
}

function encodeValue(value: unknown, strict: boolean): string {
  switch (typeof value) {
    case 'string':
      return encodeString(value);
    case 'number':
      return encodeNumber(value, strict);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return encodeArray(value, strict);
      return encodeObject(value as Record<string, unknown>, strict);
    default:
      throw HearthError.badJson(`Cannot encode a ${typeof value} as JSON`);
  }
}

/** The canonical JSON text of `value`. Throws HearthError M_BAD_JSON for values it cannot encode. */
export function canonicalJson(value: unknown, options: CanonicalJsonOptions = {}): string {
  try {
    return encodeValue(value, options.strict ?? true);
  } catch (e) {
    // Stack overflow (nesting deeper than some thousands of levels) or a result beyond the
    // maximum string length: the value is unusable, not the server broken.
    if (e instanceof RangeError) throw HearthError.badJson('JSON value too deeply nested or too large to encode');
    throw e;
  }
}

/** The canonical JSON of `value` as UTF-8 bytes (what is signed and hashed). */
export function canonicalJsonBytes(value: unknown, options: CanonicalJsonOptions = {}): Buffer {
  return Buffer.from(canonicalJson(value, options), 'utf8');
}
