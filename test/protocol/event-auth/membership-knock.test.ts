// Rule 4.7 (v7+): knocks, under join rules knock and (v10+) knock_restricted.

import { ALICE, BOB, CAROL, DAVE, runAuthCases, type AuthCase } from './room.js';

const knock = (user: string, sender: string = user) => ({
  type: 'm.room.member',
  sender,
  state_key: user,
  content: { membership: 'knock', reason: 'let me in' },
});

const cases: AuthCase[] = [
  // 4.7.3, and 4.8 before v7.
  {
    name: '4.7.3 knocking on a knock room: allowed from v7, an unknown membership before',
    room: { joinRule: 'knock' },
    event: knock(CAROL),
    expect: (v) => (v.knockJoinRule ? true : /unknown membership "knock"/),
  },
  {
    name: '4.7.3 a user of another server may knock',
    room: { joinRule: 'knock' },
    event: knock(DAVE),
    expect: (v) => (v.knockJoinRule ? true : /unknown membership/),
  },
  {
    name: '4.7.3 a user who left may knock again',
    room: { joinRule: 'knock', members: { [CAROL]: 'leave' } },
    event: knock(CAROL),
    expect: (v) => (v.knockJoinRule ? true : /unknown membership/),
  },
  {
    name: '4.7.3 knocking twice is allowed',
    room: { joinRule: 'knock', members: { [CAROL]: 'knock' } },
    event: knock(CAROL),
    expect: (v) => (v.knockJoinRule ? true : /unknown membership/),
  },
  // 4.7.1.
  { name: '4.7.1 knocking on an invite room is refused', only: (v) => v.knockJoinRule, event: knock(CAROL), expect: /knock: the join rule is "invite"/ },
  { name: '4.7.1 knocking on a public room is refused', only: (v) => v.knockJoinRule, room: { joinRule: 'public' }, event: knock(CAROL), expect: /knock: the join rule is "public"/ },
  { name: '4.7.1 knocking on a restricted room is refused', only: (v) => v.knockJoinRule, room: { joinRule: 'restricted' }, event: knock(CAROL), expect: /join rule is "restricted"/ },
  {
    name: '4.7.1 knocking on a knock_restricted room: allowed from v10',
    only: (v) => v.knockJoinRule,
    room: { joinRule: 'knock_restricted' },
    event: knock(CAROL),
    expect: (v) => (v.knockRestrictedJoinRule ? true : /join rule is "knock_restricted"/),
  },
  // 4.7.2.
  { name: '4.7.2 knocking for someone else is refused', only: (v) => v.knockJoinRule, room: { joinRule: 'knock', members: { [BOB]: 'join' } }, event: knock(CAROL, BOB), expect: /knock: sender does not match state_key/ },
  // 4.7.4.
  { name: '4.7.4 a banned user may not knock', only: (v) => v.knockJoinRule, room: { joinRule: 'knock', members: { [CAROL]: 'ban' } }, event: knock(CAROL), expect: /knock: sender's membership is ban/ },
  { name: '4.7.4 an invited user may not knock', only: (v) => v.knockJoinRule, room: { joinRule: 'knock', members: { [CAROL]: 'invite' } }, event: knock(CAROL), expect: /membership is invite/ },
  { name: '4.7.4 a joined user may not knock', only: (v) => v.knockJoinRule, room: { joinRule: 'knock' }, event: knock(ALICE), expect: /membership is join/ },
  {
    name: '4.7.4 a banned user may not knock on knock_restricted',
    only: (v) => v.knockRestrictedJoinRule,
    room: { joinRule: 'knock_restricted', members: { [CAROL]: 'ban' } },
    event: knock(CAROL),
    expect: /membership is ban/,
  },
  // A knock is followed by an invite, then a join.
  {
    name: 'a knocking user may be invited',
    only: (v) => v.knockJoinRule,
    room: { joinRule: 'knock', members: { [CAROL]: 'knock' } },
    event: { type: 'm.room.member', sender: ALICE, state_key: CAROL, content: { membership: 'invite' } },
    expect: true,
  },
];

runAuthCases('knocks', cases);
