// History visibility (client API, "Room History Visibility", server behaviour): whether a user may
// see an event, from the room's history_visibility and the user's membership at that event. A pure
// function over two small histories: the room's history_visibility changes and the user's
// membership changes, each with its position on the events stream.

import { isJsonObject } from '../protocol/json.js';

export type HistoryVisibility = 'world_readable' | 'shared' | 'invited' | 'joined';

/** A state value that took effect at an event's position. */
export interface StateChange {
  readonly position: number;
  readonly value: string;
}

export interface VisibilityHistory {
  /** The room's m.room.history_visibility values, oldest first. */
  readonly visibility: readonly StateChange[];
  /** The user's memberships in the room, oldest first. */
  readonly membership: readonly StateChange[];
}

/** What the check reads of an event. */
export interface VisibilityEvent {
  readonly position: number;
  readonly type: string;
  readonly stateKey?: string;
  /**
   * The room's history_visibility and the user's membership in the state before the event, when
   * known: in a room whose history forked, the event's own state, which the stream order does not
   * give. Without it, the values in force at the event's position.
   */
  readonly before?: { readonly visibility: string | undefined; readonly membership: string | undefined };
}

const KNOWN: ReadonlySet<string> = new Set(['world_readable', 'shared', 'invited', 'joined']);

/** An unknown or absent value counts as `shared`. */
export function historyVisibilityOf(value: string | undefined): HistoryVisibility {
  return value !== undefined && KNOWN.has(value) ? (value as HistoryVisibility) : 'shared';
}

/** The value in force before (`inclusive` false) or after (`inclusive` true) `position`. */
function valueAt(changes: readonly StateChange[], position: number, inclusive: boolean): string | undefined {
  let found: string | undefined;
  for (const c of changes) {
    if (c.position < position || (inclusive && c.position === position)) found = c.value;
    else break;
  }
  return found;
}

/** Rules 1–5 for one (visibility, membership) pair at `position`. */
function allowed(visibility: HistoryVisibility, membership: string, position: number, history: VisibilityHistory): boolean {
  // 1.
  if (visibility === 'world_readable') return true;
  // 2.
  if (membership === 'join') return true;
  // 3. Shared: the user joined at some point after the event, or is joined now (an event from a
  // fork may take a position after a join it was concurrent with; the reference server too lets
  // every current member see shared history).
  if (visibility === 'shared' && (history.membership.some((c) => c.value === 'join' && c.position > position) || history.membership.at(-1)?.value === 'join')) {
    return true;
  }
  // 4.
  if (visibility === 'invited' && membership === 'invite') return true;
  // 5.
  return false;
}

/**
 * Whether `userId` may see `event`. For an m.room.history_visibility event, and for the user's own
 * member events, the state before or after the event may allow it; otherwise the state at it.
 */
export function canSeeEvent(history: VisibilityHistory, event: VisibilityEvent, userId: string): boolean {
  const p = event.position;
  const visBefore = historyVisibilityOf(event.before !== undefined ? event.before.visibility : valueAt(history.visibility, p, false));
  const memBefore = (event.before !== undefined ? event.before.membership : valueAt(history.membership, p, false)) ?? 'leave';
  if (event.type === 'm.room.history_visibility' && event.stateKey === '') {
    const visAfter = historyVisibilityOf(valueAt(history.visibility, p, true));
    return allowed(visBefore, memBefore, p, history) || allowed(visAfter, memBefore, p, history);
  }
  if (event.type === 'm.room.member' && event.stateKey === userId) {
    const memAfter = valueAt(history.membership, p, true) ?? 'leave';
    return allowed(visBefore, memBefore, p, history) || allowed(visBefore, memAfter, p, history);
  }
  return allowed(visBefore, memBefore, p, history);
}

/**
 * Whether the user was joined when the (non-state) event at `position` was sent: the membership in
 * force just before it. An erased sender's events keep their content only for such users (the
 * reference server's rule: everyone else gets the redacted form).
 */
export function joinedAt(membership: readonly StateChange[], position: number): boolean {
  return valueAt(membership, position, false) === 'join';
}

/**
 * A state entry's history as changes: each event's `field` of its content, at its position
 * (`rows` oldest first, each with the event's JSON); an absent or empty value reads as `fallback`.
 */
export function stateChanges(rows: readonly { readonly position: number; readonly json: string }[] | undefined, field: string, fallback: string): StateChange[] {
  return (rows ?? []).map((r) => {
    const content = (JSON.parse(r.json) as { content?: unknown }).content;
    const v = isJsonObject(content) ? content[field] : undefined;
    return { position: r.position, value: typeof v === 'string' && v !== '' ? v : fallback };
  });
}
