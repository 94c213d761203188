// RoomEventFilter (client API, "Filtering"): which events of a room a client wants. Parsing checks
// the shape (400 M_BAD_JSON), matching is a pure function of the filter and one event.
// `types`/`not_types` entries may use `*` for any run of characters; `not_*` lists win over
// their positive counterparts; an absent list lets everything through, an empty one nothing.

import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';

export interface RoomEventFilter {
  readonly limit?: number;
  readonly types?: readonly string[];
  readonly not_types?: readonly string[];
  readonly senders?: readonly string[];
  readonly not_senders?: readonly string[];
  readonly rooms?: readonly string[];
  readonly not_rooms?: readonly string[];
  readonly contains_url?: boolean;
  readonly lazy_load_members?: boolean;
  readonly include_redundant_members?: boolean;
}

/** What matching reads of an event. */
export interface FilterableEvent {
  readonly type: string;
  readonly sender: string;
  readonly room_id?: string;
  readonly content: JsonObject;
}

const LIST_FIELDS = ['types', 'not_types', 'senders', 'not_senders', 'rooms', 'not_rooms'] as const;
const BOOLEAN_FIELDS = ['contains_url', 'lazy_load_members', 'include_redundant_members'] as const;

/** A RoomEventFilter from parsed JSON; unknown keys are ignored, wrong types are 400 M_BAD_JSON. */
export function parseRoomEventFilter(value: unknown): RoomEventFilter {
  if (!isJsonObject(value)) throw HearthError.badJson('A filter must be a JSON object');
  const out: { -readonly [K in keyof RoomEventFilter]: RoomEventFilter[K] } = {};
  for (const field of LIST_FIELDS) {
    const list = value[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
      throw HearthError.badJson(`Filter field "${field}" must be a list of strings`);
    }
    out[field] = list as string[];
  }
  for (const field of BOOLEAN_FIELDS) {
    const flag = value[field];
    if (flag === undefined || flag === null) continue;
    if (typeof flag !== 'boolean') throw HearthError.badJson(`Filter field "${field}" must be a boolean`);
    out[field] = flag;
  }
  if (value.limit !== undefined && value.limit !== null) {
    if (typeof value.limit !== 'number' || !Number.isInteger(value.limit) || value.limit < 0) {
      throw HearthError.badJson('Filter field "limit" must be a non-negative integer');
    }
    out.limit = value.limit;
  }
  return out;
}

/** Parses a filter given as a JSON string in a query parameter. */
export function parseRoomEventFilterParam(text: string): RoomEventFilter {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw HearthError.badJson('The filter is not valid JSON');
  }
  return parseRoomEventFilter(value);
}

/** Whether `value` matches `pattern`, where `*` in the pattern stands for any run of characters. */
export function matchesWildcard(value: string, pattern: string): boolean {
  if (!pattern.includes('*')) return value === pattern;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || value.length < first.length + last.length || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = value.indexOf(parts[i]!, at);
    if (found < 0 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

function listAllows(value: string, allow: readonly string[] | undefined, deny: readonly string[] | undefined, wildcards: boolean): boolean {
  const match = wildcards ? (p: string) => matchesWildcard(value, p) : (p: string) => p === value;
  if (deny !== undefined && deny.some(match)) return false;
  if (allow !== undefined && !allow.some(match)) return false;
  return true;
}

/** Whether the filter lets `event` through. */
export function matchesRoomEventFilter(filter: RoomEventFilter, event: FilterableEvent): boolean {
  if (!listAllows(event.type, filter.types, filter.not_types, true)) return false;
  if (!listAllows(event.sender, filter.senders, filter.not_senders, false)) return false;
  if (event.room_id !== undefined && !listAllows(event.room_id, filter.rooms, filter.not_rooms, false)) return false;
  if (filter.contains_url !== undefined) {
    const hasUrl = typeof event.content.url === 'string';
    if (hasUrl !== filter.contains_url) return false;
  }
  return true;
}

/** Whether the filter lets every event through (so matching can be skipped). */
export function isFilterTrivial(filter: RoomEventFilter): boolean {
  return (
    filter.types === undefined &&
    filter.not_types === undefined &&
    filter.senders === undefined &&
    filter.not_senders === undefined &&
    filter.rooms === undefined &&
    filter.not_rooms === undefined &&
    filter.contains_url === undefined
  );
}
