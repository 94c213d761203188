// Response bodies as JSON text: what JSON.stringify writes (keys in another order at most), except
// that an object carrying a writer under OWN_JSON may write its own text. A served event keeps the
// text of what does not change between requests (rooms/client-event.ts), so a page of 10,000
// reactions is not serialized from scratch for every request.

/** The key of an object's own writer: its JSON text, or undefined to be written as usual. */
export const OWN_JSON: unique symbol = Symbol('ownJson');

export interface WritesOwnJson {
  [OWN_JSON]?: (self: object) => string | undefined;
}

/**
 * Plain objects and arrays are walked this deep for writers (a sync response's events sit at depth
 * 6: rooms.join.<room>.timeline.events[i]); deeper, and in containers holding no object, native
 * JSON.stringify writes the rest.
 */
const MAX_DEPTH = 6;

/** JSON.stringify(value), with writers. */
export function stringifyJson(value: unknown): string | undefined {
  return write(value, 0);
}

function write(value: unknown, depth: number): string | undefined {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const own = (value as WritesOwnJson)[OWN_JSON];
  if (own !== undefined) {
    const text = own(value);
    if (text !== undefined) return text;
  }
  if (own !== undefined || depth >= MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function' || !holdsObjects(value)) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // As JSON.stringify: what has no JSON form is null in an array.
      out += write(value[i], depth + 1) ?? 'null';
    }
    return out + ']';
  }
  let out = '{';
  let first = true;
  for (const key of Object.keys(value)) {
    const text = write((value as Record<string, unknown>)[key], depth + 1);
    if (text === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + text;
    first = false;
  }
  return out + '}';
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
