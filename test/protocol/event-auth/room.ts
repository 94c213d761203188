// A small room for authorization tests: a create event, the creator's join, power levels and a join
// rule, then memberships set directly. Events under test are built with auth_events selected from
// the state, and judged both against the room state and against their own auth events.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  authStateFromEvents,
  checkAuthEventsList,
  selectAuthEvents,
} from '../../../src/protocol/auth-events.js';
import {
  checkEventAuth,
  checkStateDependentAuth,
  checkStateIndependentAuth,
  type AuthResult,
} from '../../../src/protocol/event-auth.js';
import { stateKey, type RoomEvent, type StateKey } from '../../../src/protocol/events.js';
import { isJsonObject, type JsonObject } from '../../../src/protocol/json.js';
import { roomVersions, type RoomVersion } from '../../../src/protocol/room-versions.js';
import { EventFactory, type EventSpec } from '../../support/room-events.js';

export const ALICE = '@alice:example.org'; // the creator
export const BOB = '@bob:example.org'; // moderator (50) in the default power levels
export const CAROL = '@carol:example.org';
export const ERIN = '@erin:example.org';
export const DAVE = '@dave:remote.test';

export const VERSIONS: readonly RoomVersion[] = Object.values(roomVersions);
/**
 * Versions 1–11, for suites written against their rules: v12's creators (infinite power, never
 * listed) and its create event change what those suites spell out. v12-room-version.test.ts
 * covers v12's own rules; the shared suites run on it too.
 */
export const VERSIONS_BEFORE_12: readonly RoomVersion[] = VERSIONS.filter((v) => !v.createEventRoomId);

export interface RoomOptions {
  /** Join rule; null for no m.room.join_rules event. Default `invite`. */
  joinRule?: string | null;
  /** Extra join_rules content (e.g. `allow`). */
  joinRulesContent?: JsonObject;
  /** power_levels content; null for no power_levels event. Default: alice 100, bob 50. */
  powerLevels?: JsonObject | null;
  /** Memberships set after the room is made, in order (sent by the user themselves). */
  members?: Record<string, string>;
  /** Replaces the create event's content. */
  createContent?: JsonObject;
  /** The create event's sender. Default alice. */
  creator?: string;
}

export const DEFAULT_POWER_LEVELS: JsonObject = { users: { [ALICE]: 100, [BOB]: 50 } };

/** v12: the room id is the create event's id; the fixture names both after it. */
const V12_CREATE_ID = '$create';

export class Room {
  readonly factory: EventFactory;
  readonly state = new Map<StateKey, RoomEvent>();
  readonly events = new Map<string, RoomEvent>();
  readonly create: RoomEvent;
  last: string;

  constructor(
    readonly version: RoomVersion,
    options: RoomOptions = {},
  ) {
    this.factory = new EventFactory(version.createEventRoomId ? '!' + V12_CREATE_ID.slice(1) : undefined);
    const creator = options.creator ?? ALICE;
    const createContent: JsonObject = options.createContent ?? {
      ...(version.implicitRoomCreator ? {} : { creator }),
      room_version: version.id,
    };
    this.create = this.factory.make({
      ...(version.createEventRoomId ? { id: V12_CREATE_ID } : {}),
      type: 'm.room.create',
      sender: creator,
      state_key: '',
      content: createContent,
    });
    this.store(this.create);
    this.last = this.create.event_id;
    this.add({ type: 'm.room.member', sender: creator, state_key: creator, content: { membership: 'join' } });
    let pl = options.powerLevels === undefined ? DEFAULT_POWER_LEVELS : options.powerLevels;
    // v12: creators have infinite power and are never listed.
    if (pl !== null && version.privilegedCreators && isJsonObject(pl.users) && Object.hasOwn(pl.users, creator)) {
      const { [creator]: _, ...others } = pl.users;
      pl = { ...pl, users: others };
    }
    if (pl !== null) this.add({ type: 'm.room.power_levels', sender: creator, state_key: '', content: pl });
    const joinRule = options.joinRule === undefined ? 'invite' : options.joinRule;
    if (joinRule !== null) {
      this.add({
        type: 'm.room.join_rules',
        sender: creator,
        state_key: '',
        content: { join_rule: joinRule, ...options.joinRulesContent },
      });
    }
    for (const [user, membership] of Object.entries(options.members ?? {})) {
      this.setMember(user, membership);
    }
  }

  private store(event: RoomEvent): void {
    this.events.set(event.event_id, event);
    if (event.state_key !== undefined) this.state.set(stateKey(event.type, event.state_key), event);
  }

  /** An event with auth_events selected from the current state and the latest event as prev. */
  build(spec: EventSpec): RoomEvent {
    return this.factory.make({
      prev_events: [this.last],
      auth_events: selectAuthEvents(
        { type: spec.type, sender: spec.sender, state_key: spec.state_key, content: spec.content ?? {} },
        this.state,
        this.version,
      ),
      ...spec,
    });
  }

  /** Builds an event and applies it to the state, unchecked (for setting a scene). */
  add(spec: EventSpec): RoomEvent {
    const event = this.build(spec);
    this.store(event);
    this.last = event.event_id;
    return event;
  }

  /** Sets a membership directly; `sender` defaults to the user. */
  setMember(user: string, membership: string, sender: string = user, extra: JsonObject = {}): RoomEvent {
    return this.add({
      type: 'm.room.member',
      sender,
      state_key: user,
      content: { membership, ...extra },
    });
  }

  /** Adds a state event of any type (unchecked). */
  setState(type: string, key: string, content: JsonObject, sender: string = ALICE): RoomEvent {
    return this.add({ type, sender, state_key: key, content });
  }

  authEventsOf(event: RoomEvent): RoomEvent[] {
    return event.auth_events.map((id) => {
      const e = this.events.get(id);
      assert.ok(e, `unknown auth event ${id}`);
      return e;
    });
  }

  /**
   * Judges `event` against the current state, and against its own auth events (which must pass
   * rule 2); the two verdicts must agree, and must be those of the state-free and state-dependent
   * parts together. The verdict against the state is returned.
   */
  check(eventOrSpec: RoomEvent | EventSpec): AuthResult {
    const event = 'event_id' in eventOrSpec ? eventOrSpec : this.build(eventOrSpec);
    const againstState = checkEventAuth(event, this.state, this.version);
    const independent = checkStateIndependentAuth(event, this.version);
    const dependent = checkStateDependentAuth(event, this.state, this.version);
    assert.equal(againstState.allowed, independent.allowed && dependent.allowed, 'parts disagree with the whole');
    if (event.type !== 'm.room.create') {
      const authEvents = this.authEventsOf(event);
      assert.deepEqual(checkAuthEventsList(event, authEvents, this.version), { allowed: true });
      const againstAuthEvents = checkEventAuth(event, authStateFromEvents(authEvents, this.version.createEventRoomId ? this.create : undefined), this.version);
      assert.deepEqual(againstAuthEvents, againstState, 'auth events and room state disagree');
    }
    return againstState;
  }
}

/** What a case expects: allowed (true) or denied with a reason matching the pattern. */
export type Expectation = true | RegExp;

export function assertAuth(result: AuthResult, expected: Expectation, label = ''): void {
  if (expected === true) {
    assert.deepEqual(result, { allowed: true }, `${label}: expected allowed`);
  } else {
    assert.equal(result.allowed, false, `${label}: expected denied (${expected})`);
    if (!result.allowed) assert.match(result.reason, expected, label);
  }
}

export interface AuthCase {
  name: string;
  room?: RoomOptions;
  /** More scene-setting after the room is built. */
  arrange?: (room: Room) => void;
  /** The event under test. */
  event: EventSpec | ((room: Room) => RoomEvent | EventSpec);
  expect: Expectation | ((version: RoomVersion) => Expectation);
  /** Only in the versions for which this holds (default: all). */
  only?: (version: RoomVersion) => boolean;
}

/** One `describe` per room version, one test per case that applies to it. */
export function runAuthCases(title: string, cases: readonly AuthCase[], versions: readonly RoomVersion[] = VERSIONS): void {
  describe(title, () => {
    for (const version of versions) {
      describe(`room version ${version.id}`, () => {
        for (const c of cases) {
          if (c.only !== undefined && !c.only(version)) continue;
          test(c.name, () => {
            const room = new Room(version, c.room);
            c.arrange?.(room);
            const event = typeof c.event === 'function' ? c.event(room) : c.event;
            const expected = typeof c.expect === 'function' ? c.expect(version) : c.expect;
            assertAuth(room.check(event), expected, `${c.name} (v${version.id})`);
          });
        }
      });
    }
  });
}
