// Push-rule conditions (client-server API, "Push Rules" → "Conditions"). Every field is
// type-checked here: rules are stored client JSON, and a condition that is unrecognised or
// malformed never matches, which in effect disables its rule.

import { compileGlob, compileLiteral } from './glob.js';
import { propertyAt } from './property-path.js';
import type { PushCondition, PushContext, PushEvent, PushScalar } from './types.js';

/** The power level `notifications` keys require when the room's power levels name none. */
export const DEFAULT_NOTIFICATION_POWER_LEVEL = 50;

export function conditionMatches(
  condition: PushCondition,
  event: PushEvent,
  context: PushContext,
): boolean {
  switch (condition.kind) {
    case 'event_match':
      return eventMatch(event, condition.key, condition.pattern);
    case 'event_property_is':
      return eventPropertyIs(event, condition.key, condition.value);
    case 'event_property_contains':
      return eventPropertyContains(event, condition.key, condition.value);
    case 'contains_display_name':
      return containsDisplayName(event, context.displayName);
    case 'room_member_count':
      return roomMemberCount(condition.is, context.roomMemberCount);
    case 'sender_notification_permission':
      return senderNotificationPermission(condition.key, context);
    default:
      return false;
  }
}

/**
 * Glob match, case-insensitive, against the whole string at `key`; for `content.body` against any
 * substring bounded by word boundaries. A missing or non-string property never matches.
 */
export function eventMatch(event: PushEvent, key: unknown, pattern: unknown): boolean {
  if (typeof key !== 'string' || typeof pattern !== 'string') return false;
  const value = propertyAt(event, key);
  if (typeof value !== 'string') return false;
  const glob = compileGlob(pattern);
  return key === 'content.body' ? glob.matchesWords(value) : glob.matchesWhole(value);
}

/** Exact match of a string, integer, boolean or null; no casting between types. */
export function eventPropertyIs(event: PushEvent, key: unknown, value: unknown): boolean {
  if (typeof key !== 'string' || !isPushScalar(value)) return false;
  const actual = propertyAt(event, key);
  return isPushScalar(actual) && actual === value;
}

/** The array at `key` holds the value exactly; elements of other types are ignored. */
export function eventPropertyContains(event: PushEvent, key: unknown, value: unknown): boolean {
  if (typeof key !== 'string' || !isPushScalar(value)) return false;
  const actual = propertyAt(event, key);
  if (!Array.isArray(actual)) return false;
  return actual.some((element) => isPushScalar(element) && element === value);
}

/** The user's display name as a literal (not a glob) between word boundaries of content.body. */
export function containsDisplayName(event: PushEvent, displayName: string | null | undefined): boolean {
  if (typeof displayName !== 'string' || displayName === '') return false;
  const body = propertyAt(event, 'content.body');
  if (typeof body !== 'string') return false;
  return compileLiteral(displayName).matchesWords(body);
}

const MEMBER_COUNT = /^(==|<=|>=|<|>)?([0-9]+)$/;

/** `is`: a decimal integer with an optional ==, <, >, <= or >= prefix (none means ==). */
export function roomMemberCount(is: unknown, memberCount: number): boolean {
  if (typeof is !== 'string') return false;
  const m = MEMBER_COUNT.exec(is);
  if (m === null) return false;
  const n = Number(m[2]);
  switch (m[1]) {
    case undefined:
    case '==':
      return memberCount === n;
    case '<':
      return memberCount < n;
    case '>':
      return memberCount > n;
    case '<=':
      return memberCount <= n;
    case '>=':
      return memberCount >= n;
    default:
      return false;
  }
}

/** The sender's power level reaches `notifications[key]` of the room's power levels (default 50). */
export function senderNotificationPermission(key: unknown, context: PushContext): boolean {
  if (typeof key !== 'string') return false;
  const levels = context.notificationPowerLevels;
  const named = levels !== undefined && Object.hasOwn(levels, key) ? levels[key] : undefined;
  return context.senderPowerLevel >= (powerLevelValue(named) ?? DEFAULT_NOTIFICATION_POWER_LEVEL);
}

/** A level as a number. Rooms before v10 may hold integer strings; anything else counts as absent. */
function powerLevelValue(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && /^\s*[+-]?[0-9]+\s*$/.test(value)) return Number(value);
  return undefined;
}

/**
 * Why a condition a client sends is malformed: a field of a condition kind the spec defines that
 * is missing or not of the spec's type. Undefined when it is well formed; conditions of other
 * kinds are not checked (they never match).
 */
export function conditionProblem(condition: Readonly<Record<string, unknown>>): string | undefined {
  const kind = condition['kind'];
  const needString = (...fields: string[]) => {
    const bad = fields.find((f) => typeof condition[f] !== 'string');
    return bad === undefined ? undefined : `${String(kind)}: '${bad}' must be a string`;
  };
  switch (kind) {
    case 'event_match':
      return needString('key', 'pattern');
    case 'event_property_is':
    case 'event_property_contains':
      return (
        needString('key') ??
        (Object.hasOwn(condition, 'value') && isPushScalar(condition['value'])
          ? undefined
          : `${kind}: 'value' must be a string, an integer, a boolean or null`)
      );
    case 'room_member_count':
      return (
        needString('is') ??
        (MEMBER_COUNT.test(condition['is'] as string) ? undefined : "room_member_count: 'is' must be an integer, optionally after ==, <, >, <= or >=")
      );
    case 'sender_notification_permission':
      return needString('key');
    default:
      return undefined;
  }
}

/** Strings, integers within ±(2^53−1), booleans, null: what the event_property conditions compare. */
export function isPushScalar(value: unknown): value is PushScalar {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isSafeInteger(value))
  );
}
