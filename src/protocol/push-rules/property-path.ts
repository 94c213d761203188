// Dot-separated property paths (appendices): `content.m\.relates_to.rel_type` names
// content → "m.relates_to" → rel_type. `\.` is a literal dot and `\\` a literal backslash inside
// a name; any other backslash stays as written.

import { BoundedCache } from './bounded-cache.js';

export function parsePropertyPath(key: string): string[] {
  const names: string[] = [];
  let name = '';
  for (let i = 0; i < key.length; i++) {
    const ch = key[i]!;
    if (ch === '\\') {
      const next = key[i + 1];
      if (next === '.' || next === '\\') {
        name += next;
        i++;
      } else {
        name += ch;
      }
    } else if (ch === '.') {
      names.push(name);
      name = '';
    } else {
      name += ch;
    }
  }
  names.push(name);
  return names;
}

const pathCache = new BoundedCache<string, readonly string[]>(1024, 1 << 16);

/**
 * The value at a path of an object, or undefined when some step is missing or not an object
 * (arrays are not descended into). Only own properties count.
 */
export function propertyAt(root: object, key: string): unknown {
  let path = pathCache.get(key);
  if (path === undefined) {
    path = parsePropertyPath(key);
    pathCache.set(key, path, key.length + 1);
  }
  let value: unknown = root;
  for (const name of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}
