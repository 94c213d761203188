// Response bodies as JSON bytes: the UTF-8 of what JSON.stringify writes (keys in another order at
// most), except that an object carrying a writer under OWN_JSON may write its own bytes. A served
// event keeps the bytes of what does not change between requests (rooms/client-event.ts), so a
// page of 10,000 reactions is neither serialized again nor encoded again for every request: its
// body is copied together, not built as one 3 MB string and then transcoded (an emoji in one
// reaction key makes the whole string two bytes a character).

/** The key of an object's own writer. */
export const OWN_JSON: unique symbol = Symbol('ownJson');

/** Where a writer puts its JSON. */
export interface JsonOut {
  /** Any text, as UTF-8. */
  text(s: string): void;
  /** Text the caller knows is ASCII (digits, punctuation, JSON.stringify of ASCII). */
  ascii(s: string): void;
  /** Bytes already UTF-8 JSON. */
  bytes(b: Uint8Array): void;
}

export interface WritesOwnJson {
  /** Writes the object and returns true, or writes nothing and returns false (written as usual). */
  [OWN_JSON]?: (self: object, out: JsonOut) => boolean;
}

/**
 * Plain objects and arrays are walked this deep for writers (a sync response's events sit at depth
 * 6: rooms.join.<room>.timeline.events[i]); deeper, and in containers holding no object, native
 * JSON.stringify writes the rest.
 */
const MAX_DEPTH = 6;

/** Short texts are copied a character at a time while they are ASCII; a call into Buffer costs more. */
const SHORT_TEXT = 48;

/** A growing buffer. The first, small, comes from Node's shared pool as Buffer.from's would. */
class JsonBytes implements JsonOut {
  buf: Buffer = Buffer.allocUnsafe(1024);
  len = 0;

  room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  text(s: string): void {
    if (s.length <= SHORT_TEXT) {
      this.room(s.length);
      const buf = this.buf;
      let len = this.len;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[len++] = c;
      }
      this.len = len;
      if (i === s.length) return;
      s = s.slice(i);
    }
    // At most three bytes of UTF-8 per UTF-16 unit.
    this.room(s.length * 3);
    this.len += this.buf.write(s, this.len, 'utf8');
  }

  ascii(s: string): void {
    this.room(s.length);
    const buf = this.buf;
    let len = this.len;
    for (let i = 0; i < s.length; i++) buf[len++] = s.charCodeAt(i);
    this.len = len;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  byte(c: number): void {
    this.room(1);
    this.buf[this.len++] = c;
  }
}

const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** The UTF-8 of JSON.stringify(value), with writers; undefined where JSON.stringify gives undefined. */
export function encodeJson(value: unknown): Buffer | undefined {
  const out = new JsonBytes();
  if (!write(value, 0, out)) return undefined;
  return out.buf.subarray(0, out.len);
}

/** encodeJson as text (for tests). */
export function stringifyJson(value: unknown): string | undefined {
  return encodeJson(value)?.toString('utf8');
}

/** Writes the value's JSON; false (nothing written) where it has none. */
function write(value: unknown, depth: number, out: JsonBytes): boolean {
  if (typeof value !== 'object' || value === null) return writeNative(value, out);
  const own = (value as WritesOwnJson)[OWN_JSON];
  if (own !== undefined && own(value, out)) return true;
  if (own !== undefined || depth >= MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function' || !holdsObjects(value)) {
    return writeNative(value, out);
  }
  if (Array.isArray(value)) {
    out.byte(OPEN_ARRAY);
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.byte(COMMA);
      // As JSON.stringify: what has no JSON form is null in an array.
      if (!write(value[i], depth + 1, out)) out.ascii('null');
    }
    out.byte(CLOSE_ARRAY);
    return true;
  }
  out.byte(OPEN_OBJECT);
  let first = true;
  for (const key of Object.keys(value)) {
    const start = out.len;
    if (!first) out.byte(COMMA);
    out.text(JSON.stringify(key));
    out.byte(COLON);
    // As JSON.stringify: a key whose value has no JSON form is left out.
    if (!write((value as Record<string, unknown>)[key], depth + 1, out)) {
      out.len = start;
      continue;
    }
    first = false;
  }
  out.byte(CLOSE_OBJECT);
  return true;
}

function writeNative(value: unknown, out: JsonBytes): boolean {
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) return false;
  out.text(text);
  return true;
}

/** Whether an array or object holds an object or array directly (else it is a leaf). */
function holdsObjects(value: object): boolean {
  if (Array.isArray(value)) {
    for (const v of value) if (typeof v === 'object' && v !== null) return true;
    return false;
  }
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'object' && v !== null) return true;
  }
  return false;
}
