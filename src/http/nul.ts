// NUL (U+0000) in requests. PostgreSQL refuses it in every text column and SQLite keeps it, so a
// NUL that reached storage would fail on one backend and not the other. It is refused before any
// route runs: in path and query parameters (400 M_INVALID_PARAM) and anywhere in a JSON body
// (400 M_BAD_JSON). The one exception is a body whose strings are stored only inside an event's
// JSON text, which escapes NUL and so keeps it faithfully on both backends (a message's body):
// a route says so with `allowNulInBodyStrings`, and NUL stays refused in that body's keys.

import { HearthError } from '../protocol/errors.js';
import type { JsonValue } from '../protocol/json.js';

const NUL = '\u0000';

/** 400 M_INVALID_PARAM when a path or query parameter, or a query parameter's name, holds NUL. */
export function refuseNulInParameters(
  params: Readonly<Record<string, string>>,
  query: Readonly<Record<string, string | string[] | undefined>>,
): void {
  for (const name in params) {
    if (params[name]!.includes(NUL)) throw HearthError.invalidParam(`NUL (U+0000) is not allowed in the path parameter ${name}`);
  }
  for (const name in query) {
    const value = query[name];
    const bad =
      name.includes(NUL) ||
      (typeof value === 'string' ? value.includes(NUL) : Array.isArray(value) && value.some((v) => v.includes(NUL)));
    if (bad) throw HearthError.invalidParam(`NUL (U+0000) is not allowed in the query parameter ${printable(name)}`);
  }
}

// JSON text can hold NUL only as the escape \u0000 (a raw NUL is not JSON), so one search of the
// text finds every candidate without walking the parsed body. The decoded text is searched rather
// than the bytes: a string search costs a typical message under 100 ns, a Buffer search 300 ns.
const NUL_ESCAPE = '\\u0000';
const BACKSLASH = 0x5c;

/**
 * Whether valid JSON text holds an escaped NUL. `\\u0000` is an escaped backslash followed by
 * `u0000`: the escape is real only when an odd run of backslashes ends where `u0000` starts.
 */
export function hasNulEscape(json: string): boolean {
  for (let at = json.indexOf(NUL_ESCAPE); at !== -1; at = json.indexOf(NUL_ESCAPE, at + 1)) {
    let run = 1;
    while (at - run >= 0 && json.charCodeAt(at - run) === BACKSLASH) run++;
    if (run % 2 === 1) return true;
  }
  return false;
}

/**
 * 400 M_BAD_JSON naming the first place in `value` that holds NUL: any key, and any string unless
 * `allowInStrings`. Call it only when `hasNulEscape` found one: it walks the whole body.
 */
export function refuseNulInJson(value: JsonValue, allowInStrings: boolean): void {
  const where = nulPlace(value, allowInStrings);
  if (where !== undefined) throw HearthError.badJson(`NUL (U+0000) is not allowed in ${where}`);
}

/** The first place holding NUL, as `content.key[2]`, or undefined; a loop, so any depth is safe. */
function nulPlace(root: JsonValue, allowInStrings: boolean): string | undefined {
  const stack: [JsonValue, string][] = [[root, 'the body']];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (!allowInStrings && value.includes(NUL)) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i]!, `${path}[${i}]`]);
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      for (const key of keys) if (key.includes(NUL)) return `the key "${printable(key)}" of ${path}`;
      for (let i = keys.length - 1; i >= 0; i--) stack.push([value[keys[i]!]!, `${path}.${printable(keys[i]!)}`]);
    }
  }
  return undefined;
}

/** A name as it can be shown in an error: NUL and other controls escaped as in JSON. */
function printable(name: string): string {
  return JSON.stringify(name).slice(1, -1);
}
