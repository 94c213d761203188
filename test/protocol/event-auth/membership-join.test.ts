// Rule 4.3 (v1–v5: 5.2): joins, under each join rule.

import { describe, test } from 'node:test';
import { checkEventAuth } from '../../../src/protocol/event-auth.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomVersion } from '../../../src/protocol/room-versions.js';
import { ALICE, assertAuth, BOB, CAROL, DAVE, ERIN, Room, runAuthCases, VERSIONS, type AuthCase } from './room.js';

const join = (user: string, extra: JsonObject = {}, sender: string = user) => ({
  type: 'm.room.member',
  sender,
  state_key: user,
  content: { membership: 'join', ...extra },
});
const via = (user: string) => ({ join_authorised_via_users_server: user });

// 4.3.1 is tested below, on a room holding only the create event.
const cases: AuthCase[] = [
  // 4.3.2.
  { name: '4.3.2 a join for someone else is refused', room: { joinRule: 'public' }, event: join(CAROL, {}, ALICE), expect: /does not match state_key/ },
  // 4.3.3.
  { name: '4.3.3 a banned user cannot join a public room', room: { joinRule: 'public', members: { [CAROL]: 'ban' } }, event: join(CAROL), expect: /banned/ },
  // 4.3.6.
  { name: '4.3.6 public: anyone may join', room: { joinRule: 'public' }, event: join(CAROL), expect: true },
  { name: '4.3.6 public: a user of another server may join', room: { joinRule: 'public' }, event: join(DAVE), expect: true },
  { name: '4.3.6 public: a user who left may join again', room: { joinRule: 'public', members: { [CAROL]: 'leave' } }, event: join(CAROL), expect: true },
  // 4.3.4 invite.
  { name: '4.3.4 invite: an invited user may join', room: { members: { [CAROL]: 'invite' } }, event: join(CAROL), expect: true },
  { name: '4.3.4 invite: a joined user may join again (profile change)', room: { members: { [CAROL]: 'join' } }, event: join(CAROL, { displayname: 'C' }), expect: true },
  { name: '4.3.4 invite: an uninvited user is refused', event: join(CAROL), expect: /join rule is invite and the sender is not invited/ },
  { name: '4.3.4 invite: a user who left is refused', room: { members: { [CAROL]: 'leave' } }, event: join(CAROL), expect: /not invited/ },
  { name: '4.3.4 no join_rules event counts as invite: invited may join', room: { joinRule: null, members: { [CAROL]: 'invite' } }, event: join(CAROL), expect: true },
  { name: '4.3.4 no join_rules event counts as invite: others are refused', room: { joinRule: null }, event: join(CAROL), expect: /not invited/ },
  // 4.3.7.
  { name: '4.3.7 an unknown join rule refuses', room: { joinRule: 'private' }, event: join(CAROL), expect: /not allowed by the join rule "private"/ },
  { name: '4.3.7 an unknown join rule refuses even the invited', room: { joinRule: 'private', members: { [CAROL]: 'invite' } }, event: join(CAROL), expect: /join rule "private"/ },

  // 4.3.4 knock (v7+): like invite; before v7 an unknown rule.
  {
    name: '4.3.4 knock: an invited user may join from v7',
    room: { joinRule: 'knock', members: { [CAROL]: 'invite' } },
    event: join(CAROL),
    expect: (v) => (v.knockJoinRule ? true : /join rule "knock"/),
  },
  {
    name: '4.3.4 knock: a user who only knocked may not join',
    room: { joinRule: 'knock', members: { [CAROL]: 'knock' } },
    event: join(CAROL),
    expect: (v) => (v.knockJoinRule ? /join rule is knock and the sender is not invited/ : /join rule "knock"/),
  },

  // 4.3.5 restricted (v8+).
  {
    name: '4.3.5.3 restricted: authorised by a joined user with the invite level',
    room: { joinRule: 'restricted', members: { [BOB]: 'join' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? true : /join rule "restricted"/),
  },
  {
    name: '4.3.5.3 restricted: a remote user authorised by a local member',
    room: { joinRule: 'restricted', members: { [BOB]: 'join' } },
    event: join(DAVE, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? true : /join rule "restricted"/),
  },
  {
    name: '4.3.5.1 restricted: an invited user needs no authoriser',
    room: { joinRule: 'restricted', members: { [CAROL]: 'invite' } },
    event: join(CAROL),
    expect: (v) => (v.restrictedJoinRule ? true : /join rule "restricted"/),
  },
  {
    name: '4.3.5.1 restricted: a joined user may join again',
    room: { joinRule: 'restricted', members: { [CAROL]: 'join' } },
    event: join(CAROL, { displayname: 'C' }),
    expect: (v) => (v.restrictedJoinRule ? true : /join rule "restricted"/),
  },
  {
    name: '4.3.5.2 restricted: no authorising user is refused',
    room: { joinRule: 'restricted' },
    event: join(CAROL),
    expect: (v) => (v.restrictedJoinRule ? /no join_authorised_via_users_server/ : /join rule "restricted"/),
  },
  {
    name: '4.3.5.2 restricted: an authorising user who is not joined is refused',
    room: { joinRule: 'restricted', members: { [BOB]: 'leave' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? /authorising user is not joined/ : /join rule "restricted"/),
  },
  {
    name: '4.3.5.2 restricted: an authorising user who is only invited is refused',
    room: { joinRule: 'restricted', members: { [BOB]: 'invite' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? /authorising user is not joined/ : /join rule "restricted"/),
  },
  {
    name: '4.3.5.2 restricted: an authorising user without the invite level is refused',
    room: { joinRule: 'restricted', powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, invite: 60 }, members: { [BOB]: 'join' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? /lacks the invite level/ : /join rule "restricted"/),
  },
  {
    name: '4.3.5.2 restricted: the same authoriser at the invite level is allowed',
    room: { joinRule: 'restricted', powerLevels: { users: { [ALICE]: 100, [BOB]: 60 }, invite: 60 }, members: { [BOB]: 'join' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.restrictedJoinRule ? true : /join rule "restricted"/),
  },
  {
    name: '4.3.3 restricted: a banned user is refused whoever authorises',
    room: { joinRule: 'restricted', members: { [BOB]: 'join', [CAROL]: 'ban' } },
    event: join(CAROL, via(BOB)),
    expect: /banned/,
  },
  {
    name: '4.3.2 restricted: the authorising user cannot send the join',
    room: { joinRule: 'restricted', members: { [BOB]: 'join' } },
    event: join(CAROL, via(BOB), BOB),
    expect: /does not match state_key/,
  },

  // 4.3.5 knock_restricted (v10+): restricted joins; and 4.3.4 does not cover it.
  {
    name: '4.3.5 knock_restricted: authorised join from v10',
    room: { joinRule: 'knock_restricted', members: { [BOB]: 'join' } },
    event: join(CAROL, via(BOB)),
    expect: (v) => (v.knockRestrictedJoinRule ? true : /join rule "knock_restricted"/),
  },
  {
    name: '4.3.5 knock_restricted: invited join from v10',
    room: { joinRule: 'knock_restricted', members: { [CAROL]: 'invite' } },
    event: join(CAROL),
    expect: (v) => (v.knockRestrictedJoinRule ? true : /join rule "knock_restricted"/),
  },
  {
    name: '4.3.5.2 knock_restricted: an authoriser without the invite level is refused',
    room: { joinRule: 'knock_restricted', powerLevels: { users: { [ALICE]: 100 }, invite: 50 }, members: { [ERIN]: 'join' } },
    event: join(CAROL, via(ERIN)),
    expect: (v) => (v.knockRestrictedJoinRule ? /lacks the invite level/ : /join rule "knock_restricted"/),
  },
  {
    name: '4.3.5.2 knock_restricted: a knock alone does not let one join',
    room: { joinRule: 'knock_restricted', members: { [CAROL]: 'knock' } },
    event: join(CAROL),
    expect: (v) => (v.knockRestrictedJoinRule ? /no join_authorised_via_users_server/ : /join rule "knock_restricted"/),
  },
];

runAuthCases('joins', cases);

// 4.3.1: the creator's first join, whose only prev event is the create event.
describe('4.3.1 the creator’s first join', () => {
  for (const version of VERSIONS) {
    const bare = (v: RoomVersion, createContent?: JsonObject): Room => {
      const room = new Room(v, { powerLevels: null, joinRule: null, createContent });
      // Back to the create event alone.
      for (const [key, e] of room.state) if (e.type !== 'm.room.create') room.state.delete(key);
      room.last = room.create.event_id;
      return room;
    };

    test(`v${version.id}: the creator joining right after create is allowed`, () => {
      const room = bare(version);
      assertAuth(room.check(join(ALICE)), true);
    });

    test(`v${version.id}: another user joining right after create is refused`, () => {
      const room = bare(version);
      assertAuth(room.check(join(BOB)), /not invited/);
    });

    test(`v${version.id}: the creator’s join with more prev events falls to the join rule`, () => {
      const room = bare(version);
      const event = room.build({ ...join(ALICE), prev_events: [room.create.event_id, '$other'] });
      assertAuth(checkEventAuth(event, room.state, version), /not invited/);
    });

    test(`v${version.id}: a join whose only prev event is not the create event falls to the join rule`, () => {
      const room = bare(version);
      const event = room.build({ ...join(ALICE), prev_events: ['$other'] });
      assertAuth(checkEventAuth(event, room.state, version), /not invited/);
    });
  }
});
