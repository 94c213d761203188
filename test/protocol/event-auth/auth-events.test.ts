// Auth events selection, and rule 2 on the auth_events list.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  authStateFromEvents,
  authTypesForEvent,
  checkAuthEventsList,
  selectAuthEvents,
} from '../../../src/protocol/auth-events.js';
import { stateKey, type StateKey } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomVersion } from '../../../src/protocol/room-versions.js';
import { EventFactory } from '../../support/room-events.js';
import { ALICE, assertAuth, BOB, CAROL, Room, VERSIONS_BEFORE_12 } from './room.js';

const CREATE = stateKey('m.room.create', '');
const PL = stateKey('m.room.power_levels', '');
const JR = stateKey('m.room.join_rules', '');
const mem = (u: string) => stateKey('m.room.member', u);

const member = (sender: string, target: string, content: JsonObject) => ({
  type: 'm.room.member',
  sender,
  state_key: target,
  content,
});

interface SelectionCase {
  name: string;
  event: { type: string; sender: string; state_key?: string; content: JsonObject };
  expect: (v: RoomVersion) => StateKey[];
}

const selection: SelectionCase[] = [
  { name: 'a message', event: { type: 'm.room.message', sender: BOB, content: {} }, expect: () => [CREATE, PL, mem(BOB)] },
  { name: 'a state event', event: { type: 'm.room.topic', sender: BOB, state_key: '', content: {} }, expect: () => [CREATE, PL, mem(BOB)] },
  { name: 'a join', event: member(BOB, BOB, { membership: 'join' }), expect: () => [CREATE, PL, mem(BOB), JR] },
  { name: 'an invite', event: member(ALICE, BOB, { membership: 'invite' }), expect: () => [CREATE, PL, mem(ALICE), mem(BOB), JR] },
  { name: 'a knock', event: member(BOB, BOB, { membership: 'knock' }), expect: () => [CREATE, PL, mem(BOB), JR] },
  { name: 'a leave', event: member(BOB, BOB, { membership: 'leave' }), expect: () => [CREATE, PL, mem(BOB)] },
  { name: 'a kick', event: member(ALICE, BOB, { membership: 'leave' }), expect: () => [CREATE, PL, mem(ALICE), mem(BOB)] },
  { name: 'a ban', event: member(ALICE, BOB, { membership: 'ban' }), expect: () => [CREATE, PL, mem(ALICE), mem(BOB)] },
  {
    name: 'a restricted join names the authorising user’s member event from v8',
    event: member(BOB, BOB, { membership: 'join', join_authorised_via_users_server: CAROL }),
    expect: (v) => [CREATE, PL, mem(BOB), JR, ...(v.restrictedJoinRule ? [mem(CAROL)] : [])],
  },
  {
    name: 'join_authorised_via_users_server on an invite selects nothing more',
    event: member(ALICE, BOB, { membership: 'invite', join_authorised_via_users_server: CAROL }),
    expect: () => [CREATE, PL, mem(ALICE), mem(BOB), JR],
  },
  {
    name: 'a third-party invite names the invite of its token',
    event: member(ALICE, BOB, { membership: 'invite', third_party_invite: { signed: { mxid: BOB, token: 'tok' } } }),
    expect: () => [CREATE, PL, mem(ALICE), mem(BOB), JR, stateKey('m.room.third_party_invite', 'tok')],
  },
];

describe('authTypesForEvent', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}`, () => {
      for (const c of selection) {
        assert.deepEqual(
          [...authTypesForEvent(c.event, version)].sort(),
          [...c.expect(version)].sort(),
          c.name,
        );
      }
    });
  }
});

describe('selectAuthEvents', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}: the current holders of the selected pairs, absent ones skipped`, () => {
      const room = new Room(version, { joinRule: null, members: { [BOB]: 'join' } });
      const ids = selectAuthEvents(member(ALICE, CAROL, { membership: 'invite' }), room.state, version);
      const expected = [CREATE, PL, mem(ALICE)].map((k) => room.state.get(k)!.event_id);
      assert.deepEqual([...ids].sort(), expected.sort());
      // A later change of the same pair is the one selected.
      const newPl = room.setState('m.room.power_levels', '', { users: { [ALICE]: 100 } });
      assert.ok(selectAuthEvents(member(ALICE, CAROL, { membership: 'invite' }), room.state, version).includes(newPl.event_id));
    });
  }
});

describe('checkAuthEventsList (rule 2)', () => {
  for (const version of VERSIONS_BEFORE_12) {
    describe(`room version ${version.id}`, () => {
      const setup = () => {
        const room = new Room(version, { members: { [BOB]: 'join' } });
        const event = room.build({ type: 'm.room.message', sender: BOB, content: { body: 'x' } });
        return { room, event, authEvents: room.authEventsOf(event) };
      };

      test('the selected list passes', () => {
        const { event, authEvents } = setup();
        assert.equal(authEvents.length, 3);
        assertAuth(checkAuthEventsList(event, authEvents, version), true);
        // Extra events offered but not cited change nothing.
        const { room } = setup();
        assertAuth(checkAuthEventsList(event, [...authEvents, ...room.state.values()], version), true);
      });

      test('2.1 two events for one (type, state_key) are refused', () => {
        const { room, event, authEvents } = setup();
        const olderBob = [...room.events.values()].find((e) => e.type === 'm.room.member' && e.state_key === BOB)!;
        const again = room.setMember(BOB, 'join', BOB, { displayname: 'B' });
        const e = { ...event, auth_events: [...event.auth_events.filter((id) => id !== olderBob.event_id), olderBob.event_id, again.event_id] };
        assertAuth(checkAuthEventsList(e, [...authEvents, again], version), /two m\.room\.member events/);
      });

      test('2.1 the same event cited twice is refused', () => {
        const { event, authEvents } = setup();
        const e = { ...event, auth_events: [...event.auth_events, event.auth_events[0]!] };
        assertAuth(checkAuthEventsList(e, authEvents, version), /two /);
      });

      test('2.2 an entry selection does not name is refused', () => {
        const { room, event, authEvents } = setup();
        const jr = room.state.get(JR)!;
        const e = { ...event, auth_events: [...event.auth_events, jr.event_id] };
        assertAuth(checkAuthEventsList(e, [...authEvents, jr], version), /not one this event may cite/);
      });

      test('2.2 a member event of an uninvolved user is refused', () => {
        const { room, event, authEvents } = setup();
        const alice = room.state.get(mem(ALICE))!;
        const e = { ...event, auth_events: [...event.auth_events, alice.event_id] };
        assertAuth(checkAuthEventsList(e, [...authEvents, alice], version), /not one this event may cite/);
      });

      test('2.2 a non-state event is refused', () => {
        const { room, event, authEvents } = setup();
        const msg = room.add({ type: 'm.room.message', sender: ALICE, content: {} });
        const e = { ...event, auth_events: [...event.auth_events, msg.event_id] };
        assertAuth(checkAuthEventsList(e, [...authEvents, msg], version), /not one this event may cite/);
      });

      test('2.3 a rejected entry is refused', () => {
        const { event, authEvents } = setup();
        const rejected = authEvents.find((a) => a.type === 'm.room.power_levels')!.event_id;
        const isRejected = (id: string) => id === rejected;
        assertAuth(checkAuthEventsList(event, authEvents, version, { isRejected }), /was rejected/);
        assertAuth(checkAuthEventsList(event, authEvents, version, { isRejected: () => false }), true);
      });

      test('2.4 a list without the create event is refused', () => {
        const { room, event, authEvents } = setup();
        const e = { ...event, auth_events: event.auth_events.filter((id) => id !== room.create.event_id) };
        assertAuth(checkAuthEventsList(e, authEvents, version), /lack the m\.room\.create/);
      });

      test('2.5 an entry of another room is refused', () => {
        const { event, authEvents } = setup();
        const foreign = new EventFactory('!other:example.org').make({
          id: '$foreign',
          type: 'm.room.power_levels',
          sender: ALICE,
          state_key: '',
          content: {},
        });
        const ownPl = authEvents.find((a) => a.type === 'm.room.power_levels')!;
        const e = { ...event, auth_events: [...event.auth_events.filter((id) => id !== ownPl.event_id), '$foreign'] };
        assertAuth(checkAuthEventsList(e, [...authEvents, foreign], version), /another room/);
      });

      test('an auth event that cannot be found is refused', () => {
        const { event, authEvents } = setup();
        const e = { ...event, auth_events: [...event.auth_events, '$nowhere'] };
        assertAuth(checkAuthEventsList(e, authEvents, version), /\$nowhere is missing/);
      });

      test('authStateFromEvents keys events by (type, state_key), skipping non-state', () => {
        const { room, authEvents } = setup();
        const msg = room.add({ type: 'm.room.message', sender: ALICE, content: {} });
        const state = authStateFromEvents([...authEvents, msg]);
        assert.deepEqual([...state.keys()].sort(), [CREATE, PL, mem(BOB)].sort());
        assert.equal(state.get(CREATE), room.create);
      });
    });
  }
});
