// Rules that apply to every non-create event: 2.4–2.5 seen through the state, 3 (m.federate),
// 5 (sender joined), 6 (m.room.third_party_invite), 7 (required level), 8 (@ state keys), 10.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkEventAuth,
  checkStateDependentAuth,
  checkStateIndependentAuth,
} from '../../../src/protocol/event-auth.js';
import { stateKey } from '../../../src/protocol/events.js';
import { EventFactory } from '../../support/room-events.js';
import {
  ALICE,
  assertAuth,
  BOB,
  CAROL,
  DAVE,
  Room,
  runAuthCases,
  VERSIONS,
  type AuthCase,
} from './room.js';

const message = (sender: string) => ({
  type: 'm.room.message',
  sender,
  content: { msgtype: 'm.text', body: 'hi' },
});

const cases: AuthCase[] = [
  // 5. The sender must be joined.
  { name: '5 a joined member may send a message', room: { members: { [CAROL]: 'join' } }, event: message(CAROL), expect: true },
  { name: '5 a user with no membership may not', event: message(CAROL), expect: /not joined/ },
  { name: '5 an invited user may not', room: { members: { [CAROL]: 'invite' } }, event: message(CAROL), expect: /not joined \(membership invite\)/ },
  { name: '5 a user who left may not', room: { members: { [CAROL]: 'join' } }, arrange: (r) => r.setMember(CAROL, 'leave'), event: message(CAROL), expect: /not joined/ },
  { name: '5 a banned user may not', room: { members: { [CAROL]: 'ban' } }, event: message(CAROL), expect: /not joined/ },

  // 3. m.federate.
  {
    name: '3 m.federate false: a joined user of another server is refused',
    room: { createContent: { creator: ALICE, 'm.federate': false }, joinRule: 'public', members: { [DAVE]: 'join' } },
    event: message(DAVE),
    expect: /does not federate/,
  },
  {
    name: '3 m.federate false: a user of the creator’s server is allowed',
    room: { createContent: { creator: ALICE, 'm.federate': false }, members: { [CAROL]: 'join' } },
    event: message(CAROL),
    expect: true,
  },
  {
    name: '3 m.federate false also stops other servers’ joins',
    room: { createContent: { creator: ALICE, 'm.federate': false }, joinRule: 'public' },
    event: { type: 'm.room.member', sender: DAVE, state_key: DAVE, content: { membership: 'join' } },
    expect: /does not federate/,
  },
  {
    name: '3 m.federate true lets other servers in',
    room: { createContent: { creator: ALICE, 'm.federate': true }, joinRule: 'public', members: { [DAVE]: 'join' } },
    event: message(DAVE),
    expect: true,
  },

  // 6. m.room.third_party_invite needs the invite level.
  {
    name: '6 third_party_invite with the invite level (default 0) is allowed',
    room: { members: { [CAROL]: 'join' } },
    event: { type: 'm.room.third_party_invite', sender: CAROL, state_key: 'tok', content: { display_name: 'c', public_key: 'AAAA', key_validity_url: 'https://id.test' } },
    expect: true,
  },
  {
    name: '6 third_party_invite below the invite level is refused',
    room: { powerLevels: { users: { [ALICE]: 100 }, invite: 50 }, members: { [CAROL]: 'join' } },
    event: { type: 'm.room.third_party_invite', sender: CAROL, state_key: 'tok', content: { display_name: 'c' } },
    expect: /invite level/,
  },
  {
    name: '6 third_party_invite is judged by the invite level, not its required level',
    room: { powerLevels: { users: { [ALICE]: 100 }, events: { 'm.room.third_party_invite': 100 } }, members: { [CAROL]: 'join' } },
    event: { type: 'm.room.third_party_invite', sender: CAROL, state_key: '@tok', content: {} },
    expect: true,
  },
  {
    name: '6 third_party_invite still needs a joined sender (rule 5)',
    event: { type: 'm.room.third_party_invite', sender: CAROL, state_key: 'tok', content: {} },
    expect: /not joined/,
  },

  // 7. The event type's required level.
  { name: '7 a state event needs state_default (50): refused at 0', room: { members: { [CAROL]: 'join' } }, event: { type: 'm.room.name', sender: CAROL, state_key: '', content: { name: 'x' } }, expect: /needs level 50; the sender has 0/ },
  { name: '7 a state event needs state_default (50): allowed at 50', event: { type: 'm.room.name', sender: BOB, state_key: '', content: { name: 'x' } }, room: { members: { [BOB]: 'join' } }, expect: true },
  {
    name: '7 events[type] overrides events_default: refused below',
    room: { powerLevels: { users: { [ALICE]: 100 }, events: { 'm.room.message': 20 } }, members: { [CAROL]: 'join' } },
    event: message(CAROL),
    expect: /needs level 20/,
  },
  {
    name: '7 events[type] overrides events_default: allowed at it',
    room: { powerLevels: { users: { [ALICE]: 100, [CAROL]: 20 }, events: { 'm.room.message': 20 } }, members: { [CAROL]: 'join' } },
    event: message(CAROL),
    expect: true,
  },
  {
    name: '7 events_default applies to message events',
    room: { powerLevels: { users: { [ALICE]: 100 }, events_default: 10 }, members: { [CAROL]: 'join' } },
    event: message(CAROL),
    expect: /needs level 10/,
  },
  {
    name: '7 users_default raises everyone without an entry',
    room: { powerLevels: { users: { [ALICE]: 100 }, events_default: 10, users_default: 10 }, members: { [CAROL]: 'join' } },
    event: message(CAROL),
    expect: true,
  },
  {
    name: '7 without power levels the creator has 100',
    room: { powerLevels: null },
    event: { type: 'm.room.name', sender: ALICE, state_key: '', content: { name: 'x' } },
    expect: true,
  },
  {
    name: '7 without power levels others have 0 and state needs 50',
    room: { powerLevels: null, members: { [BOB]: 'join' } },
    event: { type: 'm.room.name', sender: BOB, state_key: '', content: { name: 'x' } },
    expect: /needs level 50; the sender has 0/,
  },
  {
    name: '7 without power levels messages need 0',
    room: { powerLevels: null, members: { [BOB]: 'join' } },
    event: message(BOB),
    expect: true,
  },

  // 8. A state_key starting with @ must be the sender.
  {
    name: '8 a state_key that is the sender is allowed',
    room: { members: { [BOB]: 'join' } },
    event: { type: 'org.example.profile', sender: BOB, state_key: BOB, content: {} },
    expect: true,
  },
  {
    name: '8 a state_key naming another user is refused, even for the creator',
    room: { members: { [BOB]: 'join' } },
    event: { type: 'org.example.profile', sender: ALICE, state_key: BOB, content: {} },
    expect: /starts with @/,
  },
  {
    name: '8 any state_key starting with @ counts',
    event: { type: 'org.example.thing', sender: ALICE, state_key: '@not-even-an-id', content: {} },
    expect: /starts with @/,
  },
  {
    name: '10 otherwise allow: a custom state event with a plain state_key',
    event: { type: 'org.example.thing', sender: ALICE, state_key: 'x@y', content: {} },
    expect: true,
  },
];

runAuthCases('general rules', cases);

describe('the auth state itself', () => {
  for (const version of VERSIONS) {
    test(`v${version.id}: 2.4 no create event in the state is refused`, () => {
      const room = new Room(version, { members: { [CAROL]: 'join' } });
      const event = room.build(message(CAROL));
      const state = new Map(room.state);
      state.delete(stateKey('m.room.create', ''));
      assertAuth(checkEventAuth(event, state, version), /no m\.room\.create/);
      assertAuth(checkEventAuth(event, room.state, version), true);
    });

    test(`v${version.id}: 2.5 state events of another room are refused`, () => {
      const room = new Room(version, { members: { [CAROL]: 'join' } });
      const event = room.build(message(CAROL));
      const foreign = new EventFactory('!other:example.org').make({
        type: 'm.room.member',
        sender: CAROL,
        state_key: CAROL,
        content: { membership: 'join' },
      });
      const state = new Map(room.state);
      state.set(stateKey('m.room.member', CAROL), foreign);
      assertAuth(checkEventAuth(event, state, version), /another room/);
    });

    test(`v${version.id}: a sender without a server name is refused without state`, () => {
      const room = new Room(version, { joinRule: 'public' });
      const event = room.build({ type: 'm.room.member', sender: '@nodomain', state_key: '@nodomain', content: { membership: 'join' } });
      assertAuth(checkStateIndependentAuth(event, version), /not a user id/);
      assertAuth(checkEventAuth(event, room.state, version), /not a user id/);
    });

    test(`v${version.id}: the state-free part rejects an @ state_key and passes a message`, () => {
      const room = new Room(version);
      const bad = room.build({ type: 'org.example.thing', sender: ALICE, state_key: BOB, content: {} });
      assertAuth(checkStateIndependentAuth(bad, version), /starts with @/);
      assertAuth(checkStateDependentAuth(bad, room.state, version), /starts with @/);
      const ok = room.build(message(CAROL));
      assert.deepEqual(checkStateIndependentAuth(ok, version), { allowed: true });
      // A member event's state_key names its target, whoever sends it.
      const invite = room.build({ type: 'm.room.member', sender: ALICE, state_key: BOB, content: { membership: 'invite' } });
      assert.deepEqual(checkStateIndependentAuth(invite, version), { allowed: true });
    });
  }
});
