// Filters (client-server API, "Filtering"): validating a Filter as a client uploads it, and
// matching events against its EventFilter and RoomEventFilter parts.
//
// Semantics shared by every list: an absent list constrains nothing; a present list (even empty)
// admits only what it names; a `not_` list excludes what it names and wins over its positive list.
// Event types may use `*` to match any run of characters. `limit` 0 is accepted (clients use it to
// ask for no timeline), as the reference server does.
//
// Errors, as the reference server gives them: a `filter` query parameter that is not JSON is 400
// M_NOT_JSON; JSON that is not a valid filter (wrong types, malformed IDs, negative limits, an
// unknown event_format) is 400 M_BAD_JSON, wherever the filter comes from.

import { HearthError } from './errors.js';
import { isRoomId, isUserId } from './ids.js';
import { isJsonObject, type JsonObject, type JsonValue } from './json.js';
import { parsePropertyPath } from './push-rules/property-path.js';

export interface EventFilter {
  readonly limit?: number;
  readonly types?: readonly string[];
  readonly not_types?: readonly string[];
  readonly senders?: readonly string[];
  readonly not_senders?: readonly string[];
}

export interface RoomEventFilter extends EventFilter {
  readonly rooms?: readonly string[];
  readonly not_rooms?: readonly string[];
  readonly contains_url?: boolean;
  readonly lazy_load_members?: boolean;
  readonly include_redundant_members?: boolean;
  readonly unread_thread_notifications?: boolean;
}

export interface RoomFilter {
  readonly rooms?: readonly string[];
  readonly not_rooms?: readonly string[];
  readonly include_leave?: boolean;
  readonly ephemeral?: RoomEventFilter;
  readonly state?: RoomEventFilter;
  readonly timeline?: RoomEventFilter;
  readonly account_data?: RoomEventFilter;
}

export type EventFormat = 'client' | 'federation';

export interface Filter {
  readonly event_fields?: readonly string[];
  readonly event_format?: EventFormat;
  readonly presence?: EventFilter;
  readonly account_data?: EventFilter;
  readonly room?: RoomFilter;
}

// ---- validation ------------------------------------------------------------------------------

const badJson = (path: string, what: string) => HearthError.badJson(`Invalid filter: ${path} must be ${what}`);
const badValue = (path: string, what: string) => HearthError.badJson(`Invalid filter: ${path} ${what}`);

function objectAt(value: unknown, path: string): JsonObject {
  if (!isJsonObject(value)) throw badJson(path, 'an object');
  return value;
}

/** A key's value; null counts as absent, since clients write unset optional fields as null. */
function fieldOf(obj: JsonObject, key: string): JsonValue | undefined {
  const v = obj[key];
  return v === null ? undefined : v;
}

function booleanAt(obj: JsonObject, key: string, path: string): boolean | undefined {
  const v = fieldOf(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw badJson(`${path}.${key}`, 'a boolean');
  return v;
}

function stringsAt(
  obj: JsonObject,
  key: string,
  path: string,
  check?: { ok: (s: string) => boolean; what: string },
): string[] | undefined {
  const v = fieldOf(obj, key);
  if (v === undefined) return undefined;
  const where = `${path}.${key}`;
  if (!Array.isArray(v)) throw badJson(where, 'an array of strings');
  const out: string[] = [];
  for (const item of v) {
    if (typeof item !== 'string') throw badJson(where, 'an array of strings');
    if (check && !check.ok(item)) throw badValue(where, `holds ${JSON.stringify(item.slice(0, 80))}, not ${check.what}`);
    out.push(item);
  }
  return out;
}

const ROOM_ID = { ok: (s: string) => isRoomId(s), what: 'a room ID' };
const USER_ID = { ok: (s: string) => isUserId(s, { allowNonCompliant: true }), what: 'a user ID' };

/** Builds an object from the entries whose value is defined, so absent keys stay absent. */
function defined<T>(entries: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(entries)) if (v !== undefined) out[k] = v;
  return out as T;
}

const optional = <T>(v: JsonValue | undefined, parse: (v: JsonValue) => T): T | undefined => (v === undefined ? undefined : parse(v));

function eventFilterFields(obj: JsonObject, path: string): EventFilter {
  let limit: number | undefined;
  const rawLimit = fieldOf(obj, 'limit');
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== 'number') throw badJson(`${path}.limit`, 'an integer');
    if (!Number.isSafeInteger(rawLimit) || rawLimit < 0) throw badValue(`${path}.limit`, 'must be a non-negative integer');
    limit = rawLimit;
  }
  return defined<EventFilter>({
    limit,
    types: stringsAt(obj, 'types', path),
    not_types: stringsAt(obj, 'not_types', path),
    senders: stringsAt(obj, 'senders', path, USER_ID),
    not_senders: stringsAt(obj, 'not_senders', path, USER_ID),
  });
}

/** An EventFilter (presence, global account data). Throws 400 M_BAD_JSON. */
export function parseEventFilter(value: unknown, path = 'filter'): EventFilter {
  return eventFilterFields(objectAt(value, path), path);
}

/** A RoomEventFilter (timeline, state, ephemeral, room account data; the `filter` of /messages). Throws 400 M_BAD_JSON. */
export function parseRoomEventFilter(value: unknown, path = 'filter'): RoomEventFilter {
  const obj = objectAt(value, path);
  return defined<RoomEventFilter>({
    ...eventFilterFields(obj, path),
    rooms: stringsAt(obj, 'rooms', path, ROOM_ID),
    not_rooms: stringsAt(obj, 'not_rooms', path, ROOM_ID),
    contains_url: booleanAt(obj, 'contains_url', path),
    lazy_load_members: booleanAt(obj, 'lazy_load_members', path),
    include_redundant_members: booleanAt(obj, 'include_redundant_members', path),
    unread_thread_notifications: booleanAt(obj, 'unread_thread_notifications', path),
  });
}

function parseRoomFilter(value: unknown, path: string): RoomFilter {
  const obj = objectAt(value, path);
  const sub = (key: string) => optional(fieldOf(obj, key), (v) => parseRoomEventFilter(v, `${path}.${key}`));
  return defined<RoomFilter>({
    rooms: stringsAt(obj, 'rooms', path, ROOM_ID),
    not_rooms: stringsAt(obj, 'not_rooms', path, ROOM_ID),
    include_leave: booleanAt(obj, 'include_leave', path),
    ephemeral: sub('ephemeral'),
    state: sub('state'),
    timeline: sub('timeline'),
    account_data: sub('account_data'),
  });
}

/**
 * A whole Filter as uploaded to /user/{userId}/filter or given inline to /sync. Unknown keys are
 * ignored; anything else that is not a valid filter is 400 M_BAD_JSON.
 */
export function parseFilter(value: unknown): Filter {
  const obj = objectAt(value, 'filter');
  const format = fieldOf(obj, 'event_format');
  if (format !== undefined) {
    if (typeof format !== 'string') throw badJson('filter.event_format', 'a string');
    if (format !== 'client' && format !== 'federation') throw badValue('filter.event_format', "must be 'client' or 'federation'");
  }
  return defined<Filter>({
    event_fields: stringsAt(obj, 'event_fields', 'filter'),
    event_format: format,
    presence: optional(fieldOf(obj, 'presence'), (v) => parseEventFilter(v, 'filter.presence')),
    account_data: optional(fieldOf(obj, 'account_data'), (v) => parseEventFilter(v, 'filter.account_data')),
    room: optional(fieldOf(obj, 'room'), (v) => parseRoomFilter(v, 'filter.room')),
  });
}

/** The JSON of a `filter` query parameter (inline /sync filters, /messages, /context): 400 M_NOT_JSON if it is not JSON. */
export function filterParamJson(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw HearthError.notJson('The filter is not valid JSON');
  }
}

/** The RoomEventFilter of a /messages or /context `filter` query parameter. */
export function parseRoomEventFilterParam(text: string): RoomEventFilter {
  return parseRoomEventFilter(filterParamJson(text));
}

// ---- matching --------------------------------------------------------------------------------

/** `*` matches any run of characters (none included); everything else matches itself. */
export function matchesWildcard(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*');
  if (star === -1) return pattern === value;
  if (star === pattern.length - 1) return value.startsWith(pattern.slice(0, star));
  // Greedy match with one backtrack point (the last star): O(pattern × value) at worst.
  let p = 0;
  let v = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (v < value.length) {
    if (p < pattern.length && pattern[p] === '*') {
      starAt = p++;
      resumeAt = v;
    } else if (p < pattern.length && pattern[p] === value[v]) {
      p++;
      v++;
    } else if (starAt !== -1) {
      p = starAt + 1;
      v = ++resumeAt;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** What a filter looks at in an event (client or federation form, or an EDU). */
export interface FilterableEvent {
  readonly type: string;
  readonly sender?: string;
  readonly room_id?: string;
  readonly content?: unknown;
}

/** A filter prepared for matching many events. */
export interface EventMatcher {
  /** Whether the event passes (room lists are checked only when the event names its room). */
  matches(event: FilterableEvent): boolean;
  /** Whether the filter's room lists admit this room. */
  allowsRoom(roomId: string): boolean;
  /** The filter's `limit`, if it set one. */
  readonly limit: number | undefined;
  readonly lazyLoadMembers: boolean;
  /** Only meaningful with lazyLoadMembers, and false without it. */
  readonly includeRedundantMembers: boolean;
  readonly unreadThreadNotifications: boolean;
  /** Whether every event passes (so a caller may skip matching). */
  readonly admitsAll: boolean;
}

function listCheck(allowed: readonly string[] | undefined, denied: readonly string[] | undefined) {
  const allow = allowed === undefined ? undefined : new Set(allowed);
  const deny = new Set(denied ?? []);
  return (value: string | undefined): boolean => {
    if (value !== undefined && deny.has(value)) return false;
    if (allow === undefined) return true;
    return value !== undefined && allow.has(value);
  };
}

function typeCheck(allowed: readonly string[] | undefined, denied: readonly string[] | undefined) {
  const any = (patterns: readonly string[], t: string) => patterns.some((p) => matchesWildcard(p, t));
  return (t: string): boolean => {
    if (denied !== undefined && any(denied, t)) return false;
    return allowed === undefined || any(allowed, t);
  };
}

/** Prepares an EventFilter or RoomEventFilter (undefined: the filter that admits everything). */
export function compileEventFilter(filter: RoomEventFilter | EventFilter | undefined): EventMatcher {
  const f: RoomEventFilter = filter ?? {};
  const typeOk = typeCheck(f.types, f.not_types);
  const senderOk = listCheck(f.senders, f.not_senders);
  const roomOk = listCheck(f.rooms, f.not_rooms);
  const containsUrl = f.contains_url;
  const lazy = f.lazy_load_members === true;
  return {
    matches(event) {
      if (!typeOk(event.type)) return false;
      if (!senderOk(event.sender)) return false;
      if (event.room_id !== undefined && !roomOk(event.room_id)) return false;
      if (containsUrl !== undefined) {
        const content = event.content;
        const hasUrl = isJsonObject(content) && typeof content['url'] === 'string';
        if (hasUrl !== containsUrl) return false;
      }
      return true;
    },
    allowsRoom: (roomId) => roomOk(roomId),
    limit: f.limit,
    lazyLoadMembers: lazy,
    includeRedundantMembers: lazy && f.include_redundant_members === true,
    unreadThreadNotifications: f.unread_thread_notifications === true,
    admitsAll:
      f.types === undefined &&
      f.not_types === undefined &&
      f.senders === undefined &&
      f.not_senders === undefined &&
      f.rooms === undefined &&
      f.not_rooms === undefined &&
      containsUrl === undefined,
  };
}

/** The events of `events` that pass `filter`, in order. */
export function filterEvents<E extends FilterableEvent>(filter: EventMatcher, events: readonly E[]): E[] {
  return events.filter((e) => filter.matches(e));
}

/** The filter's limit clamped to [0, max], or `fallback` when it sets none. */
export function effectiveLimit(filter: EventMatcher, fallback: number, max: number): number {
  return Math.min(filter.limit ?? fallback, max);
}

/** A whole Filter prepared for /sync. */
export interface CompiledFilter {
  readonly presence: EventMatcher;
  readonly accountData: EventMatcher;
  /** The room-level `rooms`/`not_rooms`, applied before the per-section filters. */
  allowsRoom(roomId: string): boolean;
  readonly includeLeave: boolean;
  readonly timeline: EventMatcher;
  readonly state: EventMatcher;
  readonly ephemeral: EventMatcher;
  readonly roomAccountData: EventMatcher;
  readonly eventFields: readonly string[] | undefined;
  readonly eventFormat: EventFormat;
}

export function compileFilter(filter: Filter | undefined): CompiledFilter {
  const room = filter?.room ?? {};
  const roomOk = listCheck(room.rooms, room.not_rooms);
  return {
    presence: compileEventFilter(filter?.presence),
    accountData: compileEventFilter(filter?.account_data),
    allowsRoom: (roomId) => roomOk(roomId),
    includeLeave: room.include_leave === true,
    timeline: compileEventFilter(room.timeline),
    state: compileEventFilter(room.state),
    ephemeral: compileEventFilter(room.ephemeral),
    roomAccountData: compileEventFilter(room.account_data),
    eventFields: filter?.event_fields,
    eventFormat: filter?.event_format ?? 'client',
  };
}

// ---- event_fields ----------------------------------------------------------------------------

/**
 * The event reduced to the dot-separated paths in `fields` (appendices, "Dot-separated property
 * paths"). A path naming a missing value contributes nothing; an empty list keeps nothing.
 */
export function projectEventFields(event: JsonObject, fields: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const field of fields) {
    const path = parsePropertyPath(field);
    let src: JsonValue | undefined = event;
    for (const name of path) {
      src = isJsonObject(src) && Object.hasOwn(src, name) ? src[name] : undefined;
      if (src === undefined) break;
    }
    if (src === undefined) continue;
    let dst = out;
    for (const name of path.slice(0, -1)) {
      const next = dst[name];
      if (!isJsonObject(next)) dst[name] = {};
      dst = dst[name] as JsonObject;
    }
    // Copied, so that a later, longer path never writes into the caller's event.
    dst[path[path.length - 1]!] = typeof src === 'object' && src !== null ? structuredClone(src) : src;
  }
  return out;
}
