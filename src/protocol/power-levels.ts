// m.room.power_levels read per room version: parsing of level values (numeric strings before v10,
// truncated floats before v6), the defaults that apply without the event, and the lookups that event
// authorization and push rules ask for.

import type { RoomEvent } from './events.js';
import { isUserId } from './ids.js';
import { isJsonObject, type JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';

export interface PowerLevels {
  readonly users: ReadonlyMap<string, number>;
  readonly usersDefault: number;
  readonly events: ReadonlyMap<string, number>;
  readonly eventsDefault: number;
  readonly stateDefault: number;
  readonly ban: number;
  readonly kick: number;
  readonly redact: number;
  readonly invite: number;
  readonly notifications: ReadonlyMap<string, number>;
  /** v12+: the room's creators, whose level is infinite whatever `users` says. */
  readonly creators?: ReadonlySet<string>;
}

/** The top-level level properties, as the authorization rules list them. */
export const POWER_LEVEL_FIELDS = [
  'users_default',
  'events_default',
  'state_default',
  'ban',
  'redact',
  'kick',
  'invite',
] as const;
export type PowerLevelField = (typeof POWER_LEVEL_FIELDS)[number];

const DEFAULTS: Readonly<Record<PowerLevelField, number>> = {
  users_default: 0,
  events_default: 0,
  // 50 whether or not a power_levels event exists: Matrix 1.7 removed the older "0 without the
  // event" text as outdated. With 0, any member of a room without one could send power levels.
  state_default: 50,
  ban: 50,
  redact: 50,
  kick: 50,
  invite: 0,
};
/** Default for `@room` and any other notification key that is not given. */
const DEFAULT_NOTIFICATION_LEVEL = 50;
/** The creator's level when the room has no power_levels event. */
const CREATOR_DEFAULT_LEVEL = 100;

// v1–v9 string form: optional surrounding whitespace, optional sign, base-10 digits.
const NUMERIC_STRING = /^\s*[+-]?[0-9]+\s*$/;

/**
 * One level value as the room version reads it, or undefined when it is not a valid level:
 * v10+ only JSON integers; v1–v9 also numeric strings ("50", " +050 "); v1–v5 also finite
 * floats, truncated toward zero (v6+ events cannot carry floats: canonical JSON forbids them).
 */
export function parsePowerLevelValue(value: unknown, version: RoomVersion): number | undefined {
  if (typeof value === 'number') {
    if (Number.isInteger(value)) {
      if (version.strictCanonicalJson && !Number.isSafeInteger(value)) return undefined;
      return value === 0 ? 0 : value;
    }
    if (version.strictCanonicalJson || !Number.isFinite(value)) return undefined;
    return Math.trunc(value) || 0;
  }
  if (typeof value === 'string' && !version.enforceIntPowerLevels && NUMERIC_STRING.test(value)) {
    return Number.parseInt(value.trim(), 10) || 0;
  }
  return undefined;
}

function levelMap(value: unknown, version: RoomVersion): Map<string, number> {
  const out = new Map<string, number>();
  if (!isJsonObject(value)) return out;
  for (const [key, raw] of Object.entries(value)) {
    const level = parsePowerLevelValue(raw, version);
    if (level !== undefined) out.set(key, level);
  }
  return out;
}

/** A named top-level value of `content`, or its default when absent or not a valid level. */
export function powerLevelField(
  content: JsonObject,
  field: PowerLevelField,
  version: RoomVersion,
): number {
  return parsePowerLevelValue(content[field], version) ?? DEFAULTS[field];
}

/**
 * Levels read from a power_levels content. `users` is only built when asked for: a user's level
 * is read straight from the content, so a check in a room with a long `users` list costs one
 * lookup, not a parse of the whole list.
 */
class ContentPowerLevels implements PowerLevels {
  readonly usersDefault: number;
  readonly events: ReadonlyMap<string, number>;
  readonly eventsDefault: number;
  readonly stateDefault: number;
  readonly ban: number;
  readonly kick: number;
  readonly redact: number;
  readonly invite: number;
  readonly notifications: ReadonlyMap<string, number>;
  private usersMap: ReadonlyMap<string, number> | undefined;

  constructor(
    private readonly content: JsonObject,
    private readonly version: RoomVersion,
    readonly creators?: ReadonlySet<string>,
  ) {
    this.usersDefault = powerLevelField(content, 'users_default', version);
    this.events = levelMap(content.events, version);
    this.eventsDefault = powerLevelField(content, 'events_default', version);
    this.stateDefault = powerLevelField(content, 'state_default', version);
    this.ban = powerLevelField(content, 'ban', version);
    this.kick = powerLevelField(content, 'kick', version);
    this.redact = powerLevelField(content, 'redact', version);
    this.invite = powerLevelField(content, 'invite', version);
    this.notifications = levelMap(content.notifications, version);
  }

  get users(): ReadonlyMap<string, number> {
    this.usersMap ??= levelMap(this.content.users, this.version);
    return this.usersMap;
  }

  /** The level `users` gives `userId`, if any. */
  listedLevel(userId: string): number | undefined {
    if (this.usersMap !== undefined) return this.usersMap.get(userId);
    const users = this.content.users;
    if (!isJsonObject(users) || !Object.hasOwn(users, userId)) return undefined;
    return parsePowerLevelValue(users[userId], this.version);
  }
}

/**
 * The room's levels from a power_levels event's content. Values that are not valid levels for
 * the version read as absent. Without content (no power_levels event), the defaults apply and
 * the creator, if known, has 100.
 */
export function parsePowerLevels(
  content: JsonObject | undefined,
  version: RoomVersion,
  creator?: string,
  creators?: ReadonlySet<string>,
): PowerLevels {
  if (content !== undefined) return new ContentPowerLevels(content, version, creators);
  const users = new Map<string, number>();
  // v12 creators need no entry: their level is infinite.
  if (creator !== undefined && creators === undefined) users.set(creator, CREATOR_DEFAULT_LEVEL);
  return {
    ...(creators !== undefined ? { creators } : {}),
    users,
    usersDefault: DEFAULTS.users_default,
    events: new Map(),
    eventsDefault: DEFAULTS.events_default,
    stateDefault: DEFAULTS.state_default,
    ban: DEFAULTS.ban,
    kick: DEFAULTS.kick,
    redact: DEFAULTS.redact,
    invite: DEFAULTS.invite,
    notifications: new Map(),
  };
}

function isIntegerLevel(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/** Why `value` is not an object of levels (with user-id keys when `checkUserIds`), if it is not. */
function levelObjectProblem(
  value: unknown,
  name: string,
  valid: (level: unknown) => boolean,
  checkUserIds: boolean,
): string | undefined {
  if (!isJsonObject(value)) return `power levels: "${name}" is not an object`;
  for (const [key, level] of Object.entries(value)) {
    if (checkUserIds && !isUserId(key, { allowNonCompliant: true })) {
      return `power levels: "${key}" in "users" is not a valid user id`;
    }
    if (!valid(level)) return `power levels: "${name}.${key}" is not a valid level`;
  }
  return undefined;
}

/**
 * Why a power_levels content is malformed for the room version, or undefined when it is fine.
 * v10+ (rules 9.1–9.3): every level present must be a JSON integer and `users` keys user ids.
 * Before (rule 10.1, 9.1 in v6–v9): `users` must map user ids to levels (strings allowed); from
 * the float rules of v1–v5, numbers outside a double's range anywhere reject the event too.
 */
export function powerLevelsContentProblem(
  content: JsonObject,
  version: RoomVersion,
): string | undefined {
  if (version.enforceIntPowerLevels) {
    // 9.1. Top-level levels present must be integers.
    for (const field of POWER_LEVEL_FIELDS) {
      if (Object.hasOwn(content, field) && !isIntegerLevel(content[field])) {
        return `power levels: "${field}" is not an integer`;
      }
    }
    // 9.2. `events` and `notifications`, when present, map to integers.
    for (const name of ['events', 'notifications'] as const) {
      if (!Object.hasOwn(content, name)) continue;
      const problem = levelObjectProblem(content[name], name, isIntegerLevel, false);
      if (problem !== undefined) return problem;
    }
    // 9.3. `users` maps valid user ids to integers.
    if (!Object.hasOwn(content, 'users')) return undefined;
    return levelObjectProblem(content.users, 'users', isIntegerLevel, true);
  }
  // 10.1 (v6–v9: 9.1). `users` maps valid user ids to integers or integer strings.
  if (Object.hasOwn(content, 'users')) {
    const valid = (level: unknown): boolean => parsePowerLevelValue(level, version) !== undefined;
    const problem = levelObjectProblem(content.users, 'users', valid, true);
    if (problem !== undefined) return problem;
  }
  const outOfRange = (v: unknown): boolean => typeof v === 'number' && !Number.isFinite(v);
  for (const field of POWER_LEVEL_FIELDS) {
    if (outOfRange(content[field])) return `power levels: "${field}" is out of range`;
  }
  for (const name of ['events', 'notifications'] as const) {
    const map = content[name];
    if (isJsonObject(map) && Object.values(map).some(outOfRange)) {
      return `power levels: a value in "${name}" is out of range`;
    }
  }
  return undefined;
}

/** A level a client may set: a JSON integer; before v10 also a numeric string ("50"). Never a float. */
function clientLevelValid(value: unknown, version: RoomVersion): boolean {
  if (typeof value === 'number') return Number.isSafeInteger(value);
  return typeof value === 'string' && parsePowerLevelValue(value, version) !== undefined;
}

/**
 * Why power_levels content sent by a local client is malformed, or undefined when it is fine.
 * Stricter than the auth rules (which read a bad level as absent): every level present, top-level
 * or in `events`, `notifications` and `users`, must be a level, and `users` keys user ids. Checked
 * before authorization, as Synapse does, so a malformed event is 400 M_BAD_JSON, not 403.
 */
export function clientPowerLevelsProblem(content: JsonObject, version: RoomVersion): string | undefined {
  const valid = (level: unknown): boolean => clientLevelValid(level, version);
  const kind = version.enforceIntPowerLevels ? 'an integer' : 'an integer or a string of one';
  for (const field of POWER_LEVEL_FIELDS) {
    if (Object.hasOwn(content, field) && !valid(content[field])) return `power levels: "${field}" must be ${kind}`;
  }
  for (const name of ['events', 'notifications', 'users'] as const) {
    if (!Object.hasOwn(content, name)) continue;
    const problem = levelObjectProblem(content[name], name, valid, name === 'users');
    if (problem !== undefined) return `${problem} (levels must be ${kind})`;
  }
  return powerLevelsContentProblem(content, version);
}

/** The room creator: the create event's sender from v11, `content.creator` before. */
export function roomCreator(
  createEvent: RoomEvent | undefined,
  version: RoomVersion,
): string | undefined {
  if (createEvent === undefined) return undefined;
  if (version.implicitRoomCreator) return createEvent.sender;
  const creator = createEvent.content.creator;
  return typeof creator === 'string' ? creator : undefined;
}

/**
 * v12+: the room's creators, the create event's sender and the valid user ids of its
 * `additional_creators`; undefined before v12 (or without a create event).
 */
export function roomCreators(createEvent: RoomEvent | undefined, version: RoomVersion): ReadonlySet<string> | undefined {
  if (!version.privilegedCreators || createEvent === undefined) return undefined;
  let creators = creatorsByEvent.get(createEvent);
  if (creators === undefined) creatorsByEvent.set(createEvent, (creators = creatorsOf(createEvent.sender, createEvent.content)));
  return creators;
}
const creatorsByEvent = new WeakMap<RoomEvent, ReadonlySet<string>>();

/** v12 creators from a create event's sender and content alone (for readers without a RoomEvent). */
export function creatorsOf(sender: string, content: JsonObject): ReadonlySet<string> {
  const set = new Set<string>([sender]);
  const more = content.additional_creators;
  if (Array.isArray(more)) for (const u of more) if (typeof u === 'string' && isUserId(u, { allowNonCompliant: true })) set.add(u);
  return set;
}

/** The levels in force given the power_levels and create events of a state (either may be absent). */
// Parsed levels per power_levels event object and room version (and v12 create event): authorization
// and state resolution consult the same event for many events in a row, and the parse costs O(fields).
const parsedByEvent = new WeakMap<RoomEvent, Map<string, PowerLevels>>();

export function powerLevelsFromEvents(
  powerLevelsEvent: RoomEvent | undefined,
  createEvent: RoomEvent | undefined,
  version: RoomVersion,
): PowerLevels {
  const creators = roomCreators(createEvent, version);
  if (powerLevelsEvent === undefined) {
    return parsePowerLevels(undefined, version, roomCreator(createEvent, version), creators);
  }
  let byVersion = parsedByEvent.get(powerLevelsEvent);
  if (byVersion === undefined) parsedByEvent.set(powerLevelsEvent, (byVersion = new Map()));
  const key = creators === undefined ? version.id : `${version.id} ${createEvent!.event_id}`;
  let levels = byVersion.get(key);
  if (levels === undefined) {
    levels = parsePowerLevels(powerLevelsEvent.content, version, undefined, creators);
    byVersion.set(key, levels);
  }
  return levels;
}

/** A user's level: infinite for a v12 creator, else `users`, else `users_default`. */
export function userPowerLevel(levels: PowerLevels, userId: string): number {
  if (levels.creators?.has(userId) === true) return Infinity;
  const listed =
    levels instanceof ContentPowerLevels ? levels.listedLevel(userId) : levels.users.get(userId);
  return listed ?? levels.usersDefault;
}

/** The level needed to send an event of `type`: `events[type]`, else state_default or events_default. */
export function requiredPowerLevelForEvent(
  levels: PowerLevels,
  type: string,
  isState: boolean,
): number {
  return levels.events.get(type) ?? (isState ? levels.stateDefault : levels.eventsDefault);
}

/** The level needed to trigger the notification `key` (for example `room` for @room); default 50. */
export function notificationPowerLevel(levels: PowerLevels, key: string): number {
  return levels.notifications.get(key) ?? DEFAULT_NOTIFICATION_LEVEL;
}
