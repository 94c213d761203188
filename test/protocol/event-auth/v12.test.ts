// Room version 12's own authorization rules: a create event without room_id (1.2) whose
// additional_creators are user ids (1.4); the room id names the create event (rule 2); no event
// cites the create event (3.2), so the checks against auth events are given it apart; creators
// (the create event's sender and additional_creators) have infinite power and are never listed in
// power levels (10.4). Rule numbers are those of the v12 page; the Room fixture names the create
// event `$create` and the room `!create`.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  authStateFromEvents,
  authStateKeysForEvent,
  authTypesForEvent,
  checkAuthEventsList,
  type AuthEventSubject,
} from '../../../src/protocol/auth-events.js';
import {
  checkEventAuth,
  checkStateDependentAuth,
  checkStateIndependentAuth,
} from '../../../src/protocol/event-auth.js';
import { stateKey, toRoomEvent, type Pdu, type RoomEvent } from '../../../src/protocol/events.js';
import type { JsonObject, JsonValue } from '../../../src/protocol/json.js';
import { powerLevelsFromEvents, userPowerLevel } from '../../../src/protocol/power-levels.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { EventFactory } from '../../support/room-events.js';
import {
  ALICE,
  assertAuth,
  BOB,
  CAROL,
  DAVE,
  ERIN,
  Room,
  runAuthCases,
  type AuthCase,
  type Expectation,
} from './room.js';

const V12 = roomVersions['12']!;
const V11 = roomVersions['11']!;
const MAX_LEVEL = Number.MAX_SAFE_INTEGER;
const CREATE_KEY = stateKey('m.room.create', '');

/** A create event judged by every entry point alike (it needs no state). */
function assertCreate(event: RoomEvent, expected: Expectation, label: string): void {
  assertAuth(checkStateIndependentAuth(event, V12), expected, `${label} (independent)`);
  assertAuth(checkStateDependentAuth(event, new Map(), V12), expected, `${label} (dependent)`);
  assertAuth(checkEventAuth(event, new Map(), V12), expected, `${label} (both)`);
}

/** A v12 create PDU (unsigned and unhashed: the auth rules read neither). */
function createPdu(content: JsonObject, extra: Partial<Pdu> = {}): Pdu {
  return {
    type: 'm.room.create',
    sender: ALICE,
    state_key: '',
    content: { room_version: '12', ...content },
    origin_server_ts: 1_000,
    depth: 1,
    auth_events: [],
    prev_events: [],
    hashes: { sha256: 'x' },
    signatures: {},
    ...extra,
  };
}

describe('v12 rule 1: the create event', () => {
  const factory = new EventFactory('!create');

  test('1.5 a create event without room_id is allowed; its RoomEvent view takes the room id from its id', () => {
    const event = toRoomEvent(createPdu({}), '$abc', V12);
    assert.equal(event.room_id, '!abc');
    assertCreate(event, true, 'no room_id');
  });

  test('1.2 a create event with a room_id is rejected', () => {
    const pdu = createPdu({}, { room_id: '!somewhere' });
    const event = toRoomEvent(pdu, '$abc', V12);
    assert.equal(event.room_id, '!somewhere');
    assertCreate(event, /create event has a room_id/, 'room_id given');
    // Even a room_id of the pre-v12 form, whose server is the sender's.
    const old = toRoomEvent(createPdu({}, { room_id: '!abc:example.org' }), '$abc', V12);
    assertCreate(old, /create event has a room_id/, 'room_id with a server name');
    // A factory event whose room_id is not the one its id makes had one.
    assertCreate(
      factory.make({ id: '$other', type: 'm.room.create', sender: ALICE, state_key: '', content: { room_version: '12' } }),
      /create event has a room_id/,
      'factory event',
    );
    // The room_id of v11 (the sender's server) is exactly what v11 wants, and v12 refuses.
    const v11Create = new EventFactory('!room:example.org').make({ type: 'm.room.create', sender: ALICE, state_key: '', content: { room_version: '11' } });
    assertAuth(checkEventAuth(v11Create, new Map(), V11), true, 'v11');
    assertAuth(checkEventAuth(v11Create, new Map(), V12), /create event has a room_id/, 'v11 shape in v12');
  });

  test('1.1 prev_events are still refused, before the room_id is looked at', () => {
    const event = factory.make({ id: '$create', type: 'm.room.create', sender: ALICE, state_key: '', content: {}, prev_events: ['$x'] });
    assertCreate(event, /prev_events/, 'prev_events');
  });

  test('1.3 an unknown room_version is refused', () => {
    assertCreate(toRoomEvent(createPdu({ room_version: '99' }), '$abc', V12), /unknown room version/, '99');
  });

  const additional: Array<[string, JsonValue, Expectation]> = [
    ['a list of user ids', [BOB, DAVE], true],
    ['an empty list', [], true],
    ['a list naming the sender too', [ALICE, BOB], true],
    ['a string', BOB, /additional_creators/],
    ['an object', { [BOB]: true }, /additional_creators/],
    ['null', null, /additional_creators/],
    ['a number', 1, /additional_creators/],
    ['a list holding a number', [BOB, 5], /additional_creators/],
    ['a list holding null', [null], /additional_creators/],
    ['a list holding a list', [[BOB]], /additional_creators/],
    ['a list holding an id without a server name', ['@bob'], /additional_creators/],
    ['a list holding an id without the @ sigil', ['bob:example.org'], /additional_creators/],
    ['a list holding a room id', ['!room:example.org'], /additional_creators/],
    ['a list holding an empty string', [''], /additional_creators/],
    ['a list holding one bad id after good ones', [BOB, DAVE, 'carol'], /additional_creators/],
  ];
  for (const [name, value, expected] of additional) {
    test(`1.4 additional_creators as ${name}: ${expected === true ? 'allowed' : 'rejected'}`, () => {
      assertCreate(toRoomEvent(createPdu({ additional_creators: value }), '$abc', V12), expected, name);
    });
  }

  test('1.4 is v12 only: v11 does not look at additional_creators', () => {
    const event = new EventFactory('!room:example.org').make({
      type: 'm.room.create',
      sender: ALICE,
      state_key: '',
      content: { room_version: '11', additional_creators: 'not a list' },
    });
    assertAuth(checkEventAuth(event, new Map(), V11), true, 'v11');
  });
});

describe('v12 rule 2: the room id names the create event', () => {
  const topic = { type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: 't' } };

  test('an event of the room the create event names is allowed', () => {
    const room = new Room(V12);
    assert.equal(room.create.event_id, '$create');
    assertAuth(room.check(topic), true, 'same room');
  });

  for (const roomId of ['!elsewhere', '!other', '$create', 'create', '!create:example.org', '!Create']) {
    test(`an event in ${roomId} is rejected against the state of !create`, () => {
      const room = new Room(V12);
      const event: RoomEvent = { ...room.build(topic), room_id: roomId };
      assert.equal(event.room_id, roomId);
      assertAuth(checkEventAuth(event, room.state, V12), /does not name the room's create event/, 'against the state');
      const authState = authStateFromEvents(room.authEventsOf(event), room.create);
      assertAuth(checkEventAuth(event, authState, V12), /does not name the room's create event/, 'against auth events');
    });
  }

  test("an event whose room id names another create event than the one given is rejected", () => {
    const room = new Room(V12);
    const other = new EventFactory('!other').make({ id: '$other', type: 'm.room.create', sender: ALICE, state_key: '', content: { room_version: '12' } });
    assertAuth(checkEventAuth(other, new Map(), V12), true, 'the other create event is itself fine');
    const event = room.build(topic);
    const state = new Map(room.state);
    state.set(CREATE_KEY, other);
    assertAuth(checkEventAuth(event, state, V12), /does not name the room's create event/, 'create of !other');
    assertAuth(checkEventAuth(event, authStateFromEvents(room.authEventsOf(event), other), V12), /does not name/, 'auth events');
  });

  test('before v12 the room id need not name the create event', () => {
    const room = new Room(V11);
    assert.equal(room.create.room_id, '!room:example.org');
    assertAuth(room.check(topic), true, 'v11');
  });
});

describe('v12 rule 3.2: the create event is never selected for auth_events', () => {
  const subjects: Array<[string, AuthEventSubject]> = [
    ['a message', { type: 'm.room.message', sender: BOB, content: { body: 'hi' } }],
    ['a state event', { type: 'm.room.topic', sender: BOB, state_key: '', content: {} }],
    ['power levels', { type: 'm.room.power_levels', sender: ALICE, state_key: '', content: {} }],
    ['a join', { type: 'm.room.member', sender: BOB, state_key: BOB, content: { membership: 'join' } }],
    [
      'a restricted join',
      { type: 'm.room.member', sender: BOB, state_key: BOB, content: { membership: 'join', join_authorised_via_users_server: CAROL } },
    ],
    ['an invite', { type: 'm.room.member', sender: ALICE, state_key: BOB, content: { membership: 'invite' } }],
    [
      'a third-party invite',
      {
        type: 'm.room.member',
        sender: ALICE,
        state_key: BOB,
        content: { membership: 'invite', third_party_invite: { signed: { mxid: BOB, token: 'tok' } } },
      },
    ],
    ['a knock', { type: 'm.room.member', sender: BOB, state_key: BOB, content: { membership: 'knock' } }],
    ['a kick', { type: 'm.room.member', sender: ALICE, state_key: BOB, content: { membership: 'leave' } }],
    ['a ban', { type: 'm.room.member', sender: ALICE, state_key: BOB, content: { membership: 'ban' } }],
  ];
  test('authTypesForEvent never names m.room.create in v12 (and always did in v11)', () => {
    for (const [name, subject] of subjects) {
      assert.equal(authTypesForEvent(subject, V12).includes(CREATE_KEY), false, `v12: ${name}`);
      assert.equal(authTypesForEvent(subject, V11).includes(CREATE_KEY), true, `v11: ${name}`);
      // The keys the rules read still hold it: the room id names it.
      assert.equal(authStateKeysForEvent(subject, V12).includes(CREATE_KEY), true, `v12 rule keys: ${name}`);
    }
    // The create event itself has none.
    assert.deepEqual(authTypesForEvent({ type: 'm.room.create', sender: ALICE, state_key: '', content: {} }, V12), []);
    assert.deepEqual(authStateKeysForEvent({ type: 'm.room.create', sender: ALICE, state_key: '', content: {} }, V12), []);
  });

  test('an auth_events list citing the create event is rejected', () => {
    const room = new Room(V12, { members: { [BOB]: 'join' } });
    const ok = room.build({ type: 'm.room.message', sender: BOB, content: { body: 'hi' } });
    assert.equal(ok.auth_events.includes('$create'), false);
    assertAuth(checkAuthEventsList(ok, room.authEventsOf(ok), V12), true, 'without the create event');
    const citing: RoomEvent = { ...ok, event_id: '$citing', auth_events: ['$create', ...ok.auth_events] };
    assertAuth(
      checkAuthEventsList(citing, [room.create, ...room.authEventsOf(ok)], V12),
      /\$create \(m\.room\.create\) is not one this event may cite/,
      'citing the create event',
    );
    // Citing the create event alone is just as wrong.
    const only: RoomEvent = { ...ok, event_id: '$only', auth_events: ['$create'] };
    assertAuth(checkAuthEventsList(only, [room.create], V12), /not one this event may cite/, 'the create event alone');
  });

  test('a list without the create event is not short of it in v12 (it is in v11)', () => {
    for (const version of [V12, V11]) {
      const room = new Room(version, { members: { [BOB]: 'join' } });
      const event = room.build({ type: 'm.room.message', sender: BOB, content: { body: 'hi' } });
      const withoutCreate: RoomEvent = { ...event, auth_events: event.auth_events.filter((id) => id !== room.create.event_id) };
      const authEvents = room.authEventsOf(withoutCreate);
      assertAuth(
        checkAuthEventsList(withoutCreate, authEvents, version),
        version.createEventRoomId ? true : /lack the m\.room\.create/,
        `v${version.id}`,
      );
    }
  });

  test('the checks against auth events need the create event given apart; without it they deny', () => {
    const room = new Room(V12, { members: { [BOB]: 'join' } });
    const event = room.build({ type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: 't' } });
    const authEvents = room.authEventsOf(event);
    assert.equal(authEvents.some((e) => e.type === 'm.room.create'), false);
    assertAuth(checkEventAuth(event, authStateFromEvents(authEvents), V12), /no m\.room\.create event/, 'without');
    assertAuth(checkEventAuth(event, authStateFromEvents(authEvents, room.create), V12), true, 'with');
    // A member event too (its rules read the create event for 4.3.1 and m.federate).
    const join = room.build({ type: 'm.room.member', sender: CAROL, state_key: CAROL, content: { membership: 'join' } });
    assertAuth(checkEventAuth(join, authStateFromEvents(room.authEventsOf(join)), V12), /no m\.room\.create event/, 'join without');
  });
});

describe('v12: creators have infinite power', () => {
  test('the sender of the create event and the additional creators have level Infinity', () => {
    const room = new Room(V12, { createContent: { room_version: '12', additional_creators: [ERIN, 'not a user'] } });
    // (The create event above is invalid by 1.4; levels only read the valid ids of it.)
    const pl = room.state.get(stateKey('m.room.power_levels', ''));
    const levels = powerLevelsFromEvents(pl, room.create, V12);
    assert.equal(userPowerLevel(levels, ALICE), Infinity);
    assert.equal(userPowerLevel(levels, ERIN), Infinity);
    assert.equal(userPowerLevel(levels, BOB), 50);
    assert.equal(userPowerLevel(levels, 'not a user'), 0);
    // Without power levels, too.
    const bare = powerLevelsFromEvents(undefined, room.create, V12);
    assert.equal(userPowerLevel(bare, ALICE), Infinity);
    assert.equal(userPowerLevel(bare, ERIN), Infinity);
    assert.equal(userPowerLevel(bare, BOB), 0);
  });

  // Alice created the room with Erin as an additional creator; Bob has 100, Carol 50.
  const creators = {
    createContent: { room_version: '12', additional_creators: [ERIN] },
    powerLevels: { users: { [BOB]: 100, [CAROL]: 50 } },
    members: { [BOB]: 'join', [CAROL]: 'join', [ERIN]: 'join', [DAVE]: 'join' },
  };
  const member = (sender: string, target: string, membership: string) => ({
    type: 'm.room.member',
    sender,
    state_key: target,
    content: { membership },
  });
  const levels = (sender: string, users: JsonObject, more: JsonObject = {}) => ({
    type: 'm.room.power_levels',
    sender,
    state_key: '',
    content: { users, ...more },
  });
  const kept = { [BOB]: 100, [CAROL]: 50 };

  const cases: AuthCase[] = [
    // Kicks and bans: 4.5.4 / 4.6.2 want the target strictly below the sender.
    { name: 'the creator kicks a user at 100', room: creators, event: member(ALICE, BOB, 'leave'), expect: true },
    { name: 'the creator bans a user at 100', room: creators, event: member(ALICE, BOB, 'ban'), expect: true },
    { name: 'an additional creator kicks a user at 100', room: creators, event: member(ERIN, BOB, 'leave'), expect: true },
    { name: 'an additional creator bans a user at 100', room: creators, event: member(ERIN, BOB, 'ban'), expect: true },
    { name: 'a user at 100 kicks a user at 50 (control)', room: creators, event: member(BOB, CAROL, 'leave'), expect: true },
    { name: 'a user at 100 cannot kick the creator', room: creators, event: member(BOB, ALICE, 'leave'), expect: /not above the target/ },
    { name: 'a user at 100 cannot ban the creator', room: creators, event: member(BOB, ALICE, 'ban'), expect: /not above the target/ },
    { name: 'a user at 100 cannot kick an additional creator', room: creators, event: member(BOB, ERIN, 'leave'), expect: /not above the target/ },
    { name: 'a user at 100 cannot ban an additional creator', room: creators, event: member(BOB, ERIN, 'ban'), expect: /not above the target/ },
    { name: 'the creator cannot kick an additional creator', room: creators, event: member(ALICE, ERIN, 'leave'), expect: /not above the target/ },
    { name: 'the creator cannot ban an additional creator', room: creators, event: member(ALICE, ERIN, 'ban'), expect: /not above the target/ },
    { name: 'an additional creator cannot kick the creator', room: creators, event: member(ERIN, ALICE, 'leave'), expect: /not above the target/ },
    { name: 'an additional creator cannot ban the creator', room: creators, event: member(ERIN, ALICE, 'ban'), expect: /not above the target/ },
    {
      name: 'the creator unbans a user banned by a user at 100',
      room: creators,
      arrange: (r) => void r.setMember(DAVE, 'ban', BOB),
      event: member(ALICE, DAVE, 'leave'),
      expect: true,
    },
    {
      name: 'a creator leaves of their own accord',
      room: creators,
      event: member(ERIN, ERIN, 'leave'),
      expect: true,
    },
    // Rule 8: the required level, however high.
    {
      name: 'an additional creator sends events needing the highest level there is',
      room: { ...creators, powerLevels: { users: kept, events: { 'm.room.name': MAX_LEVEL }, state_default: MAX_LEVEL, events_default: MAX_LEVEL } },
      event: { type: 'm.room.name', sender: ERIN, state_key: '', content: { name: 'n' } },
      expect: true,
    },
    {
      name: 'an additional creator sends a message needing the highest level there is',
      room: { ...creators, powerLevels: { users: kept, events_default: MAX_LEVEL } },
      event: { type: 'm.room.message', sender: ERIN, content: { body: 'hi' } },
      expect: true,
    },
    {
      name: 'the creator sends a state event needing the highest level there is',
      room: { ...creators, powerLevels: { users: kept, state_default: MAX_LEVEL } },
      event: { type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: 't' } },
      expect: true,
    },
    {
      name: 'a user at 100 cannot send what needs more (control)',
      room: { ...creators, powerLevels: { users: kept, events: { 'm.room.name': 101 } } },
      event: { type: 'm.room.name', sender: BOB, state_key: '', content: { name: 'n' } },
      expect: /needs level 101; the sender has 100/,
    },
    {
      name: 'an additional creator invites when the invite level is the highest there is',
      room: { ...creators, powerLevels: { users: kept, invite: MAX_LEVEL } },
      event: member(ERIN, '@frank:example.org', 'invite'),
      expect: true,
    },
    {
      name: 'an additional creator sends a third-party invite at the highest invite level',
      room: { ...creators, powerLevels: { users: kept, invite: MAX_LEVEL } },
      event: { type: 'm.room.third_party_invite', sender: ERIN, state_key: 'tok', content: {} },
      expect: true,
    },
    // 10.4: creators are never listed in `users`.
    {
      name: 'a user at 100 cannot demote the creator',
      room: creators,
      event: levels(BOB, { ...kept, [ALICE]: 0 }),
      expect: /@alice:example\.org is a creator of the room/,
    },
    {
      name: 'a user at 100 cannot list an additional creator',
      room: creators,
      event: levels(BOB, { ...kept, [ERIN]: 50 }),
      expect: /@erin:example\.org is a creator of the room/,
    },
    {
      name: 'the creator cannot list itself, even at 100',
      room: creators,
      event: levels(ALICE, { ...kept, [ALICE]: 100 }),
      expect: /@alice:example\.org is a creator/,
    },
    {
      name: 'the creator cannot list an additional creator',
      room: creators,
      event: levels(ALICE, { ...kept, [ERIN]: 100 }),
      expect: /@erin:example\.org is a creator/,
    },
    {
      name: 'an additional creator cannot list the creator',
      room: creators,
      event: levels(ERIN, { ...kept, [ALICE]: MAX_LEVEL }),
      expect: /@alice:example\.org is a creator/,
    },
    {
      name: 'the first power_levels event may not list the creator',
      room: { ...creators, powerLevels: null },
      event: levels(ALICE, { [ALICE]: 100, [BOB]: 50 }),
      expect: /@alice:example\.org is a creator/,
    },
    {
      name: 'the first power_levels event may not list an additional creator',
      room: { ...creators, powerLevels: null },
      event: levels(ALICE, { [ERIN]: 100 }),
      expect: /@erin:example\.org is a creator/,
    },
    {
      name: 'the first power_levels event listing no creator is allowed',
      room: { ...creators, powerLevels: null },
      event: levels(ALICE, { [BOB]: 100 }),
      expect: true,
    },
    {
      name: 'the first power_levels event may list no one',
      room: { ...creators, powerLevels: null },
      event: levels(ERIN, {}),
      expect: true,
    },
    // Rules 10.6–10.10 with an infinite sender level.
    {
      name: 'the creator raises a user to the highest level there is',
      room: creators,
      event: levels(ALICE, { [BOB]: MAX_LEVEL, [CAROL]: 50 }),
      expect: true,
    },
    {
      name: 'an additional creator raises two users above 100 and every other level too',
      room: creators,
      event: levels(
        ERIN,
        { [BOB]: 1000, [CAROL]: MAX_LEVEL },
        {
          ban: MAX_LEVEL,
          kick: MAX_LEVEL,
          redact: MAX_LEVEL,
          invite: MAX_LEVEL,
          state_default: MAX_LEVEL,
          events_default: MAX_LEVEL,
          users_default: MAX_LEVEL,
          events: { 'm.room.name': MAX_LEVEL },
          notifications: { room: MAX_LEVEL },
        },
      ),
      expect: true,
    },
    {
      name: 'the creator demotes a user at 100 and removes another',
      room: creators,
      event: levels(ALICE, { [BOB]: 0 }),
      expect: true,
    },
    {
      name: 'the creator lowers levels a user at 100 set above 100',
      room: { ...creators, powerLevels: { users: kept, events: { 'm.room.name': 500 }, ban: 500 } },
      event: levels(ALICE, kept, { events: { 'm.room.name': 0 }, ban: 0 }),
      expect: true,
    },
    {
      name: 'a user at 100 cannot raise another to 101 (control)',
      room: creators,
      event: levels(BOB, { [BOB]: 100, [CAROL]: 101 }),
      expect: /cannot give @carol:example\.org level 101, above the sender's 100/,
    },
    {
      name: 'a user at 100 cannot change another user at 100 (control)',
      room: { ...creators, powerLevels: { users: { [BOB]: 100, [CAROL]: 100 } } },
      event: levels(BOB, { [BOB]: 100, [CAROL]: 0 }),
      expect: /cannot change @carol:example\.org's level 100/,
    },
    // 4.3.1 (v12 5.3.1) names the create event's sender alone.
    {
      name: "an additional creator's join is judged like anyone's",
      room: { ...creators, members: {}, joinRule: 'invite' },
      event: member(ERIN, ERIN, 'join'),
      expect: /not invited/,
    },
  ];

  runAuthCases('v12 creators', cases, [V12]);

  test("the creator's first join after the create event alone is allowed; an additional creator's is not", () => {
    const room = new Room(V12, { createContent: { room_version: '12', additional_creators: [ERIN] }, powerLevels: null, joinRule: null });
    for (const [key, e] of room.state) if (e.type !== 'm.room.create') room.state.delete(key);
    room.last = room.create.event_id;
    const join = (user: string) => ({ type: 'm.room.member', sender: user, state_key: user, content: { membership: 'join' } });
    assertAuth(room.check(join(ALICE)), true, 'creator');
    assertAuth(room.check(join(ERIN)), /not invited/, 'additional creator');
  });

  test('a creator is a creator by the create event, whatever power levels say', () => {
    // A power_levels event listing Alice (as a v11 room would, carried over by hand) does not cap her.
    const room = new Room(V12, { members: { [BOB]: 'join' } });
    const listing = room.factory.make({
      type: 'm.room.power_levels',
      sender: ALICE,
      state_key: '',
      content: { users: { [ALICE]: 0, [BOB]: 100 } },
    });
    const state = new Map(room.state);
    state.set(stateKey('m.room.power_levels', ''), listing);
    const ban = room.build({ type: 'm.room.member', sender: ALICE, state_key: BOB, content: { membership: 'ban' } });
    assertAuth(checkEventAuth(ban, state, V12), true, 'the creator bans a user at 100');
    const back = room.build({ type: 'm.room.member', sender: BOB, state_key: ALICE, content: { membership: 'ban' } });
    assertAuth(checkEventAuth(back, state, V12), /not above the target/, 'the user at 100 cannot ban the creator');
  });
});
