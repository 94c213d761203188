// Request bodies. Clients send JSON with and without a content type, so bodies are read as bytes
// and parsed here, where a parse failure can get the spec's errcode.

import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { hasNulEscape, refuseNulInJson } from './nul.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The deepest nesting of objects and arrays a body may have, the body itself counting as level 1.
 * Canonical JSON, hashing, redaction, storage and the replies that wrap an event (a sync response
 * adds about ten levels) all recurse; at this depth each has ample stack. Synapse fails near 1000
 * levels on Python's recursion limit; no real event or account data comes near either.
 */
export const MAX_JSON_DEPTH = 512;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** How deeply objects and arrays nest in valid JSON text; a loop, so any depth is safe to measure. */
export function jsonTextDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > deepest) deepest = depth;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return deepest;
}

export interface JsonBodyOptions {
  /** Accept NUL (U+0000) in string values (never in keys): see `RouteDef.allowNulInBodyStrings`. */
  readonly allowNulInStrings?: boolean;
}

/** A request's JSON object body; an empty body reads as `{}`. NUL in it is refused (see nul.ts). */
export function parseJsonObjectBody(raw: unknown, options: JsonBodyOptions = {}): JsonObject {
  if (raw === undefined || raw === null) return {};
  if (!Buffer.isBuffer(raw)) throw HearthError.notJson();
  if (raw.length === 0) return {};
  let text: string;
  let value: unknown;
  try {
    text = utf8.decode(raw);
    value = JSON.parse(text);
  } catch {
    throw HearthError.notJson();
  }
  if (!isJsonObject(value)) throw HearthError.badJson('Content must be a JSON object.');
  // Nesting past the limit takes more than two brackets per level; most bodies are shorter.
  if (text.length > 2 * MAX_JSON_DEPTH && jsonTextDepth(text) > MAX_JSON_DEPTH) {
    throw HearthError.badJson(`JSON too deeply nested: at most ${MAX_JSON_DEPTH} levels of objects and arrays`);
  }
  if (hasNulEscape(text)) refuseNulInJson(value, options.allowNulInStrings ?? false);
  return value;
}
