// Event authorization: the auth rules of room versions 1–12 as pure functions.
//
// Rule numbers follow room versions 6–11. Versions 1–5 have an extra rule 4 for m.room.aliases,
// so their rules 5–11 are numbered 4–10 here; versions 1–2 also have rule 11 for redactions.
// Version 12 inserts its rule 2 (the room id names the create event), so its later rules are one
// higher; its additions are marked "v12".
// Rule 2 (the auth_events list itself) is `checkAuthEventsList` in auth-events.ts: the checks here
// see the auth events only as a state map. From v12 no event cites the create event, so the state
// map given must hold it all the same (the event the room id names).

import { authTypesForEvent } from './auth-events.js';
import { ALLOW, AuthStateView, deny, domainOf, type AuthResult } from './auth-state.js';
import type { RoomEvent, StateLookup } from './events.js';
import { checkMemberEvent } from './membership-auth.js';
import { checkPowerLevelsEvent } from './power-levels-auth.js';
import { isUserId } from './ids.js';
import { powerLevelsContentProblem, requiredPowerLevelForEvent } from './power-levels.js';
import { getRoomVersion, type RoomVersion } from './room-versions.js';

export type { AuthResult } from './auth-state.js';

// 1. m.room.create.
function checkCreateEvent(event: RoomEvent, version: RoomVersion): AuthResult {
  // 1.1.
  if (event.prev_events.length > 0) return deny('create event has prev_events');
  if (version.createEventRoomId) {
    // v12 1.2. No room_id: the room id is the event's own (`toRoomEvent` gives it that one).
    if (event.room_id !== '!' + event.event_id.slice(1)) return deny('create event has a room_id');
  } else {
    // 1.2.
    const roomDomain = domainOf(event.room_id);
    if (roomDomain === undefined || roomDomain !== domainOf(event.sender)) {
      return deny('create event: room id and sender are of different servers');
    }
  }
  // 1.3.
  if (Object.hasOwn(event.content, 'room_version')) {
    const v = event.content.room_version;
    if (typeof v !== 'string' || getRoomVersion(v) === undefined) {
      return deny(`create event: unknown room version ${JSON.stringify(v)}`);
    }
  }
  // 1.4 (v1–v10; from v11 the sender is the creator).
  if (!version.implicitRoomCreator && !Object.hasOwn(event.content, 'creator')) {
    return deny('create event has no creator');
  }
  // v12 1.4. additional_creators, when present, is a list of user ids.
  if (version.privilegedCreators && Object.hasOwn(event.content, 'additional_creators')) {
    const more = event.content.additional_creators;
    if (!Array.isArray(more) || !more.every((u) => typeof u === 'string' && isUserId(u, { allowNonCompliant: true }))) {
      return deny('create event: additional_creators is not a list of user ids');
    }
  }
  // 1.5.
  return ALLOW;
}

/** Whether rule 8 (state_key starting with `@`) is reached for an event of this type. */
function reachesStateKeyRule(type: string, version: RoomVersion): boolean {
  return (
    type !== 'm.room.create' &&
    type !== 'm.room.member' &&
    type !== 'm.room.third_party_invite' &&
    !(version.specialCaseAliases && type === 'm.room.aliases')
  );
}

/** The v1–v5 rule 4 tests on m.room.aliases that need no state. */
function aliasesProblem(event: RoomEvent): string | undefined {
  // 4.1.
  if (event.state_key === undefined) return 'aliases event has no state_key';
  // 4.2.
  if (domainOf(event.sender) !== event.state_key) {
    return "aliases event: state_key is not the sender's server";
  }
  return undefined;
}

/**
 * The rules that need no room state (create-event rules, format facts such as the sender's and
 * room's domains, member and power_levels content shapes, @ state keys). A create event is fully
 * judged here; any other event is only rejected here or passed on to `checkStateDependentAuth`.
 * The auth_events list (rule 2) is judged by `checkAuthEventsList` in auth-events.ts.
 */
export function checkStateIndependentAuth(event: RoomEvent, version: RoomVersion): AuthResult {
  // 1.
  if (event.type === 'm.room.create') return checkCreateEvent(event, version);
  if (domainOf(event.sender) === undefined) return deny('sender is not a user id');
  // v1–v5 rule 4.1–4.2.
  if (version.specialCaseAliases && event.type === 'm.room.aliases') {
    const problem = aliasesProblem(event);
    if (problem !== undefined) return deny(problem);
  }
  // 4.1.
  if (event.type === 'm.room.member') {
    if (event.state_key === undefined) return deny('member event has no state_key');
    if (!Object.hasOwn(event.content, 'membership')) return deny('member event has no membership');
  }
  // 8.
  if (
    reachesStateKeyRule(event.type, version) &&
    event.state_key?.startsWith('@') === true &&
    event.state_key !== event.sender
  ) {
    return deny('state_key starts with @ and is not the sender');
  }
  // 9.1–9.3 (v1–v5: 10.1).
  if (event.type === 'm.room.power_levels') {
    const problem = powerLevelsContentProblem(event.content, version);
    if (problem !== undefined) return deny(problem);
  }
  return ALLOW;
}

/**
 * The rules against the state the event is authorized by: `authState` maps stateKey(type, key) to
 * the event holding that state (from the event's auth_events, or from the room state when
 * checking against current state). It repeats the state-free tests that sit between the
 * state-dependent ones, so only the sender's format is left to `checkStateIndependentAuth`.
 */
export function checkStateDependentAuth(
  event: RoomEvent,
  authState: StateLookup,
  version: RoomVersion,
): AuthResult {
  // 1. The create event needs no state.
  if (event.type === 'm.room.create') return checkCreateEvent(event, version);
  const view = new AuthStateView(authState, version);

  // 2.4. The create event must be in the state.
  const create = view.create;
  if (create === undefined) return deny('no m.room.create event in the auth state');
  // v12 2. The room id names the create event.
  if (version.createEventRoomId && event.room_id !== '!' + create.event_id.slice(1)) {
    return deny(`the room id ${event.room_id} does not name the room's create event`);
  }
  // 2.5. The state entries this event may cite must be of its room.
  for (const key of authTypesForEvent(event, version)) {
    const authEvent = authState.get(key);
    if (authEvent !== undefined && authEvent.room_id !== event.room_id) {
      return deny(`auth event ${authEvent.event_id} belongs to another room`);
    }
  }

  // 3. m.federate false keeps out other servers.
  const senderDomain = domainOf(event.sender);
  if (create.content['m.federate'] === false && senderDomain !== domainOf(create.sender)) {
    return deny("the room does not federate and the sender is not of the creator's server");
  }

  // v1–v5 rule 4: m.room.aliases is judged by the sender's server alone.
  if (version.specialCaseAliases && event.type === 'm.room.aliases') {
    const problem = aliasesProblem(event);
    return problem === undefined ? ALLOW : deny(problem);
  }

  // 4 (v1–v5: 5). m.room.member.
  if (event.type === 'm.room.member') return checkMemberEvent(event, view, version);

  // 5. The sender must be joined.
  const senderMembership = view.membership(event.sender);
  if (senderMembership !== 'join') {
    // A user the room never saw has no member event: say so rather than report 'leave'.
    if (view.get('m.room.member', event.sender) === undefined) return deny('sender is not joined (not in the room)');
    return deny(`sender is not joined (membership ${senderMembership})`);
  }

  const senderLevel = view.userLevel(event.sender);
  const levels = view.levels;
  // 6. m.room.third_party_invite needs the invite level.
  if (event.type === 'm.room.third_party_invite') {
    if (senderLevel >= levels.invite) return ALLOW;
    return deny('third_party_invite: sender lacks the invite level');
  }

  // 7. The event type's required level.
  const required = requiredPowerLevelForEvent(levels, event.type, event.state_key !== undefined);
  if (required > senderLevel) {
    return deny(`${event.type} needs level ${required}; the sender has ${senderLevel}`);
  }

  // 8. A state_key starting with @ is the sender's own.
  if (event.state_key?.startsWith('@') === true && event.state_key !== event.sender) {
    return deny('state_key starts with @ and is not the sender');
  }

  // 9 (v1–v5: 10). m.room.power_levels.
  if (event.type === 'm.room.power_levels') return checkPowerLevelsEvent(event, view, version);

  // v1–v2 rule 11: redactions. Their ids carry a server name only in those versions' id format;
  // from v3 the redaction's effect is decided when serving (see `redactionApplies`).
  if (version.eventIdFormat === 'v1' && event.type === 'm.room.redaction') {
    // 11.1.
    if (senderLevel >= levels.redact) return ALLOW;
    // 11.2.
    const redactedDomain = event.redacts === undefined ? undefined : domainOf(event.redacts);
    if (redactedDomain !== undefined && redactedDomain === domainOf(event.event_id)) return ALLOW;
    // 11.3.
    return deny('redaction: sender lacks the redact level and the event is of another server');
  }

  // 10 (v1–v5: 11; v1–v2: 12). Otherwise, allow.
  return ALLOW;
}

/** Both, in the spec's order. */
export function checkEventAuth(
  event: RoomEvent,
  authState: StateLookup,
  version: RoomVersion,
): AuthResult {
  // The state-dependent pass repeats every state-free test but the sender's format, in the
  // spec's order, so only that one runs first.
  if (event.type !== 'm.room.create' && domainOf(event.sender) === undefined) {
    return deny('sender is not a user id');
  }
  return checkStateDependentAuth(event, authState, version);
}

/**
 * Whether an authorized redaction takes effect on `redacted` (spec: "Handling redactions", v3+),
 * with `authState` the state the redaction was authorized against. Both must be in one room;
 * from v3 the sender needs the redact level or the redacted event's sender's server. In v1–v2
 * rule 11 already decided.
 */
export function redactionApplies(
  redaction: RoomEvent,
  redacted: RoomEvent,
  authState: StateLookup,
  version: RoomVersion,
): boolean {
  if (redaction.type !== 'm.room.redaction' || redaction.redacts !== redacted.event_id) return false;
  if (redaction.room_id !== redacted.room_id) return false;
  if (version.eventIdFormat === 'v1') return true;
  // 1. The redact level.
  const view = new AuthStateView(authState, version);
  if (view.userLevel(redaction.sender) >= view.levels.redact) return true;
  // 2. The same server as the redacted event's sender.
  const senderDomain = domainOf(redaction.sender);
  return senderDomain !== undefined && senderDomain === domainOf(redacted.sender);
}
