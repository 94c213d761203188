// auth_events: which state entries an event's auth_events are drawn from (server-server API, "Auth
// events selection"), choosing them from a room state, and rule 2 of the authorization rules,
// which judges the list itself.

import { ALLOW, deny, type AuthResult } from './auth-state.js';
import { stateKey, type RoomEvent, type StateKey } from './events.js';
import { isJsonObject, type JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';

/** What auth-event selection reads of an event (a new event has no id yet). */
export interface AuthEventSubject {
  readonly type: string;
  readonly sender: string;
  readonly state_key?: string;
  readonly content: JsonObject;
}

/** The (type, state_key) pairs an event's auth_events must be drawn from (spec: server-server-api.md "Auth events selection"). */
export function authTypesForEvent(event: AuthEventSubject, version: RoomVersion): StateKey[] {
  // The create event has no auth events.
  if (event.type === 'm.room.create') return [];
  // Rooms v1–v11 select the create event; from v12 the room id names it instead.
  const keys = new Set<StateKey>();
  if (!version.createEventRoomId) keys.add(stateKey('m.room.create', ''));
  keys.add(stateKey('m.room.power_levels', ''));
  keys.add(stateKey('m.room.member', event.sender));
  if (event.type === 'm.room.member') {
    const membership = event.content.membership;
    if (event.state_key !== undefined) keys.add(stateKey('m.room.member', event.state_key));
    if (membership === 'join' || membership === 'invite' || membership === 'knock') {
      keys.add(stateKey('m.room.join_rules', ''));
    }
    if (membership === 'invite' && Object.hasOwn(event.content, 'third_party_invite')) {
      const invite = event.content.third_party_invite;
      const signed = isJsonObject(invite) ? invite.signed : undefined;
      const token = isJsonObject(signed) ? signed.token : undefined;
      if (typeof token === 'string') keys.add(stateKey('m.room.third_party_invite', token));
    }
    const via = event.content.join_authorised_via_users_server;
    if (membership === 'join' && version.restrictedJoinRule && typeof via === 'string') {
      keys.add(stateKey('m.room.member', via));
    }
  }
  return [...keys];
}

/** Given the current room state (stateKey → RoomEvent), the ids for a new event's auth_events. */
export function selectAuthEvents(
  event: AuthEventSubject,
  state: ReadonlyMap<StateKey, RoomEvent>,
  version: RoomVersion,
): string[] {
  const ids: string[] = [];
  for (const key of authTypesForEvent(event, version)) {
    const found = state.get(key);
    if (found !== undefined) ids.push(found.event_id);
  }
  return ids;
}

/**
 * Auth events as the state map the authorization rules read (stateKey → event). From v12 no
 * event cites the create event: give it as `create` (the event the room id names).
 */
export function authStateFromEvents(authEvents: readonly RoomEvent[], create?: RoomEvent): Map<StateKey, RoomEvent> {
  const state = new Map<StateKey, RoomEvent>();
  if (create !== undefined) state.set(stateKey('m.room.create', ''), create);
  for (const e of authEvents) {
    if (e.state_key !== undefined) state.set(stateKey(e.type, e.state_key), e);
  }
  return state;
}

/** The keys the authorization rules read for `event`: its auth-event keys, and from v12 the create event. */
export function authStateKeysForEvent(event: AuthEventSubject, version: RoomVersion): StateKey[] {
  const keys = authTypesForEvent(event, version);
  if (version.createEventRoomId && event.type !== 'm.room.create') keys.push(stateKey('m.room.create', ''));
  return keys;
}

export interface AuthEventsListOptions {
  /** Whether an auth event was itself rejected (rule 2.3); without it no entry counts as rejected. */
  isRejected?: (eventId: string) => boolean;
}

/**
 * Rule 2 of the auth rules, about the auth_events list itself: every listed id must be among
 * `authEvents`, no (type, state_key) twice, only pairs that selection allows, none rejected, the
 * create event present, all in the event's room. The create event is judged by rule 1 alone.
 */
export function checkAuthEventsList(
  event: RoomEvent,
  authEvents: readonly RoomEvent[],
  version: RoomVersion,
  options: AuthEventsListOptions = {},
): AuthResult {
  if (event.type === 'm.room.create') return ALLOW;
  const byId = new Map<string, RoomEvent>();
  for (const e of authEvents) byId.set(e.event_id, e);
  const allowed = new Set(authTypesForEvent(event, version));
  const seen = new Set<StateKey>();
  for (const id of event.auth_events) {
    const authEvent = byId.get(id);
    if (authEvent === undefined) return deny(`auth event ${id} is missing`);
    const key =
      authEvent.state_key === undefined ? undefined : stateKey(authEvent.type, authEvent.state_key);
    // 2.1. No duplicate (type, state_key).
    if (key !== undefined && seen.has(key)) {
      return deny(`auth events hold two ${authEvent.type} events for state_key ${JSON.stringify(authEvent.state_key)}`);
    }
    // 2.2. Only entries the selection algorithm names.
    if (key === undefined || !allowed.has(key)) {
      return deny(`auth event ${id} (${authEvent.type}) is not one this event may cite`);
    }
    seen.add(key);
    // 2.3. No entry that was itself rejected.
    if (options.isRejected?.(id) === true) return deny(`auth event ${id} was rejected`);
    // 2.5. All in the event's room.
    if (authEvent.room_id !== event.room_id) return deny(`auth event ${id} belongs to another room`);
  }
  // 2.4. The create event must be among them (v12 3.2: it never is; the room id names it).
  if (!version.createEventRoomId && !seen.has(stateKey('m.room.create', ''))) return deny('auth events lack the m.room.create event');
  return ALLOW;
}
