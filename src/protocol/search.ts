// POST /search (client-server API, "Server Side Search"): reading the request body of the one
// category there is, `room_events`, and the opaque `next_batch` token.
//
// Errors: a required field absent is 400 M_MISSING_PARAM; a field of the wrong JSON type, or a
// filter that is not one, 400 M_BAD_JSON; a value outside what the spec lists (a category, key,
// order_by or group_by it does not name, a bad token) 400 M_INVALID_PARAM.

import { HearthError } from './errors.js';
import { parseRoomEventFilter, type RoomEventFilter } from './filters.js';
import { isJsonObject, type JsonObject } from './json.js';

export type SearchKey = 'content.body' | 'content.name' | 'content.topic';
export type SearchOrder = 'rank' | 'recent';
export type SearchGroupKey = 'room_id' | 'sender';

export const SEARCH_KEYS: readonly SearchKey[] = ['content.body', 'content.name', 'content.topic'];

export interface RoomEventsSearch {
  readonly searchTerm: string;
  readonly keys: readonly SearchKey[];
  readonly filter: RoomEventFilter;
  readonly orderBy: SearchOrder;
  readonly eventContext?: { readonly beforeLimit: number; readonly afterLimit: number; readonly includeProfile: boolean };
  readonly includeState: boolean;
  readonly groupBy: readonly SearchGroupKey[];
}

/** The parsed body: undefined when it asks for no room_events search. */
export interface SearchRequest {
  readonly roomEvents: RoomEventsSearch | undefined;
}

const MAX_CONTEXT = 100;

const missing = (path: string) => new HearthError(400, 'M_MISSING_PARAM', `Missing ${path}`);
const wrongType = (path: string, what: string) => HearthError.badJson(`${path} must be ${what}`);

function field(obj: JsonObject, key: string): unknown {
  const v = obj[key];
  return v === null ? undefined : v;
}

function objectAt(obj: JsonObject, key: string, path: string): JsonObject | undefined {
  const v = field(obj, key);
  if (v === undefined) return undefined;
  if (!isJsonObject(v)) throw wrongType(path, 'an object');
  return v;
}

function booleanAt(obj: JsonObject, key: string, path: string): boolean | undefined {
  const v = field(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw wrongType(path, 'a boolean');
  return v;
}

function limitAt(obj: JsonObject, key: string, path: string, fallback: number): number {
  const v = field(obj, key);
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw wrongType(path, 'an integer');
  if (v < 0) throw HearthError.invalidParam(`${path} must not be negative`);
  return Math.min(v, MAX_CONTEXT);
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], path: string): T {
  if (typeof value !== 'string') throw wrongType(path, 'a string');
  if (!(allowed as readonly string[]).includes(value)) throw HearthError.invalidParam(`${path} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value.slice(0, 40))}`);
  return value as T;
}

export function parseSearchRequest(body: JsonObject): SearchRequest {
  const categories = objectAt(body, 'search_categories', 'search_categories');
  if (categories === undefined) throw missing('search_categories');
  for (const name of Object.keys(categories)) {
    if (name !== 'room_events') throw HearthError.invalidParam(`Unknown search category ${JSON.stringify(name.slice(0, 40))}`);
  }
  const room = objectAt(categories, 'room_events', 'search_categories.room_events');
  return { roomEvents: room === undefined ? undefined : parseRoomEvents(room, 'search_categories.room_events') };
}

function parseRoomEvents(room: JsonObject, path: string): RoomEventsSearch {
  const term = field(room, 'search_term');
  if (term === undefined) throw missing(`${path}.search_term`);
  if (typeof term !== 'string') throw wrongType(`${path}.search_term`, 'a string');
  let keys: SearchKey[] = [...SEARCH_KEYS];
  const rawKeys = field(room, 'keys');
  if (rawKeys !== undefined) {
    if (!Array.isArray(rawKeys)) throw wrongType(`${path}.keys`, 'an array of strings');
    keys = [...new Set(rawKeys.map((k) => oneOf(k, SEARCH_KEYS, `${path}.keys`)))];
  }
  const rawFilter = field(room, 'filter');
  const filter = rawFilter === undefined ? {} : parseRoomEventFilter(rawFilter, `${path}.filter`);
  const rawOrder = field(room, 'order_by');
  const orderBy = rawOrder === undefined ? 'rank' : oneOf<SearchOrder>(rawOrder, ['rank', 'recent'], `${path}.order_by`);
  const context = objectAt(room, 'event_context', `${path}.event_context`);
  const eventContext =
    context === undefined
      ? undefined
      : {
          beforeLimit: limitAt(context, 'before_limit', `${path}.event_context.before_limit`, 5),
          afterLimit: limitAt(context, 'after_limit', `${path}.event_context.after_limit`, 5),
          includeProfile: booleanAt(context, 'include_profile', `${path}.event_context.include_profile`) ?? false,
        };
  const includeState = booleanAt(room, 'include_state', `${path}.include_state`) ?? false;
  const groupBy: SearchGroupKey[] = [];
  const groupings = objectAt(room, 'groupings', `${path}.groupings`);
  const rawGroups = groupings === undefined ? undefined : field(groupings, 'group_by');
  if (rawGroups !== undefined) {
    if (!Array.isArray(rawGroups)) throw wrongType(`${path}.groupings.group_by`, 'an array');
    for (const g of rawGroups) {
      if (!isJsonObject(g)) throw wrongType(`${path}.groupings.group_by`, 'an array of objects');
      const key = oneOf<SearchGroupKey>(field(g, 'key'), ['room_id', 'sender'], `${path}.groupings.group_by.key`);
      if (!groupBy.includes(key)) groupBy.push(key);
    }
  }
  return { searchTerm: term, keys, filter, orderBy, ...(eventContext ? { eventContext } : {}), includeState, groupBy };
}

/** Where the next page starts: matches skipped (rank order) or the position to continue below (recent). */
export interface SearchCursor {
  readonly order: SearchOrder;
  readonly offset: number;
  readonly before: number | undefined;
}

export function encodeSearchCursor(c: SearchCursor): string {
  const text = c.order === 'rank' ? `r${c.offset}` : `t${c.before ?? ''}`;
  return Buffer.from(text, 'utf8').toString('base64url');
}

export function decodeSearchCursor(token: string, order: SearchOrder): SearchCursor {
  const text = Buffer.from(token, 'base64url').toString('utf8');
  const m = /^([rt])(-?\d{1,16})$/.exec(text);
  if (m === null) throw HearthError.invalidParam('Invalid next_batch token');
  const n = Number(m[2]);
  if (m[1] === 'r' && order === 'rank' && n >= 0) return { order, offset: n, before: undefined };
  if (m[1] === 't' && order === 'recent') return { order, offset: 0, before: n };
  throw HearthError.invalidParam('The next_batch token is not of this search (order_by differs)');
}
