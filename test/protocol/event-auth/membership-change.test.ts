// Rules 4.1, 4.4 (invites without a third party), 4.5 (leave, kick, unban), 4.6 (ban), 4.8.

import { ALICE, BOB, CAROL, DAVE, ERIN, runAuthCases, type AuthCase } from './room.js';
import type { JsonObject } from '../../../src/protocol/json.js';

const member = (sender: string, target: string, membership: string, extra: JsonObject = {}) => ({
  type: 'm.room.member',
  sender,
  state_key: target,
  content: { membership, ...extra },
});

const shape: AuthCase[] = [
  // 4.1.
  { name: '4.1 a member event without state_key is refused', event: { type: 'm.room.member', sender: ALICE, content: { membership: 'join' } }, expect: /no state_key/ },
  { name: '4.1 a member event without membership is refused', event: { type: 'm.room.member', sender: ALICE, state_key: ALICE, content: { displayname: 'A' } }, expect: /no membership/ },
  // 4.8.
  { name: '4.8 an unknown membership is refused', event: member(ALICE, CAROL, 'summon'), expect: /unknown membership "summon"/ },
  { name: '4.8 a membership that is not a string is refused', event: member(ALICE, ALICE, 'join', { membership: 1 }), expect: /unknown membership 1/ },
];

const invites: AuthCase[] = [
  // 4.4.4.
  { name: '4.4.4 a joined member at the invite level (0) may invite', room: { members: { [CAROL]: 'join' } }, event: member(CAROL, ERIN, 'invite'), expect: true },
  { name: '4.4.4 a user of another server may be invited', event: member(ALICE, DAVE, 'invite'), expect: true },
  { name: '4.4.4 a user who left may be invited again', room: { members: { [ERIN]: 'leave' } }, event: member(ALICE, ERIN, 'invite'), expect: true },
  { name: '4.4.4 re-inviting the invited is allowed', room: { members: { [ERIN]: 'invite' } }, event: member(ALICE, ERIN, 'invite'), expect: true },
  // 4.4.2.
  { name: '4.4.2 a sender who is not joined may not invite', event: member(CAROL, ERIN, 'invite'), expect: /invite: sender is not joined/ },
  { name: '4.4.2 an invited sender may not invite', room: { members: { [CAROL]: 'invite' } }, event: member(CAROL, ERIN, 'invite'), expect: /invite: sender is not joined/ },
  { name: '4.4.2 one cannot invite oneself', event: member(CAROL, CAROL, 'invite'), expect: /invite: sender is not joined/ },
  // 4.4.3.
  { name: '4.4.3 a joined target may not be invited', room: { members: { [ERIN]: 'join' } }, event: member(ALICE, ERIN, 'invite'), expect: /already joined/ },
  { name: '4.4.3 a banned target may not be invited', room: { members: { [ERIN]: 'ban' } }, event: member(ALICE, ERIN, 'invite'), expect: /already banned/ },
  // 4.4.5.
  {
    name: '4.4.5 below the invite level is refused',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, invite: 50 }, members: { [CAROL]: 'join' } },
    event: member(CAROL, ERIN, 'invite'),
    expect: /lacks the invite level/,
  },
  {
    name: '4.4.4 at a raised invite level it is allowed',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, invite: 50 }, members: { [BOB]: 'join' } },
    event: member(BOB, ERIN, 'invite'),
    expect: true,
  },
  {
    name: '4.4.4 a string invite level counts before v10',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: '50' }, invite: '50' }, members: { [BOB]: 'join' } },
    event: member(BOB, ERIN, 'invite'),
    // From v10 the string values read as absent: bob is at users_default 0, invite is 0.
    expect: true,
  },
  {
    name: '4.4.5 string levels: bob at "40" is below invite "50" before v10',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: '40' }, invite: '50' }, members: { [BOB]: 'join' } },
    event: member(BOB, ERIN, 'invite'),
    expect: (v) => (v.enforceIntPowerLevels ? true : /lacks the invite level/),
  },
];

const leaves: AuthCase[] = [
  // 4.5.1.
  { name: '4.5.1 a joined member may leave', room: { members: { [CAROL]: 'join' } }, event: member(CAROL, CAROL, 'leave'), expect: true },
  { name: '4.5.1 an invited user may reject the invite', room: { members: { [CAROL]: 'invite' } }, event: member(CAROL, CAROL, 'leave'), expect: true },
  {
    name: '4.5.1 a knocking user may withdraw from v7',
    room: { members: { [CAROL]: 'knock' } },
    event: member(CAROL, CAROL, 'leave'),
    expect: (v) => (v.knockJoinRule ? true : /cannot leave from membership knock/),
  },
  { name: '4.5.1 a user with no membership may not leave', event: member(CAROL, CAROL, 'leave'), expect: /cannot leave from membership leave/ },
  { name: '4.5.1 a user who left may not leave again', room: { members: { [CAROL]: 'leave' } }, event: member(CAROL, CAROL, 'leave'), expect: /cannot leave from membership leave/ },
  { name: '4.5.1 a banned user may not unban themselves', room: { members: { [CAROL]: 'ban' } }, event: member(CAROL, CAROL, 'leave'), expect: /cannot leave from membership ban/ },
  // 4.5.4 kicks.
  { name: '4.5.4 kick: the kick level and above the target', room: { members: { [BOB]: 'join', [CAROL]: 'join' } }, event: member(BOB, CAROL, 'leave'), expect: true },
  { name: '4.5.4 kick: an invite may be revoked', room: { members: { [BOB]: 'join', [CAROL]: 'invite' } }, event: member(BOB, CAROL, 'leave'), expect: true },
  { name: '4.5.5 kick: below the kick level is refused', room: { members: { [CAROL]: 'join', [ERIN]: 'join' } }, event: member(CAROL, ERIN, 'leave'), expect: /lacks the kick level or is not above/ },
  { name: '4.5.5 kick: a target of higher level is refused', room: { members: { [BOB]: 'join' } }, event: member(BOB, ALICE, 'leave'), expect: /lacks the kick level or is not above/ },
  {
    name: '4.5.5 kick: a target of equal level is refused',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50, [ERIN]: 50 } }, members: { [BOB]: 'join', [ERIN]: 'join' } },
    event: member(BOB, ERIN, 'leave'),
    expect: /not above/,
  },
  {
    name: '4.5.4 kick: a raised kick level is met',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 75 }, kick: 75 }, members: { [BOB]: 'join', [CAROL]: 'join' } },
    event: member(BOB, CAROL, 'leave'),
    expect: true,
  },
  {
    name: '4.5.5 kick: a raised kick level is not met',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, kick: 75 }, members: { [BOB]: 'join', [CAROL]: 'join' } },
    event: member(BOB, CAROL, 'leave'),
    expect: /lacks the kick level/,
  },
  // 4.5.2.
  { name: '4.5.2 kick: a sender who is not joined is refused', room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 } }, members: { [BOB]: 'invite', [CAROL]: 'join' } }, event: member(BOB, CAROL, 'leave'), expect: /kick: sender is not joined/ },
  // 4.5.3 unban.
  { name: '4.5.4 unban: with the ban and kick levels', room: { members: { [BOB]: 'join', [CAROL]: 'ban' } }, event: member(BOB, CAROL, 'leave'), expect: true },
  {
    name: '4.5.3 unban: without the ban level is refused',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, ban: 75 }, members: { [BOB]: 'join', [CAROL]: 'ban' } },
    event: member(BOB, CAROL, 'leave'),
    expect: /unban: sender lacks the ban level/,
  },
  {
    name: '4.5.5 unban: with the ban level but not the kick level is refused',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, kick: 75 }, members: { [BOB]: 'join', [CAROL]: 'ban' } },
    event: member(BOB, CAROL, 'leave'),
    expect: /lacks the kick level/,
  },
  {
    name: '4.5.5 unban: a banned user of higher level stays banned',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50, [CAROL]: 60 } }, members: { [BOB]: 'join', [CAROL]: 'ban' } },
    event: member(BOB, CAROL, 'leave'),
    expect: /not above the target/,
  },
];

const bans: AuthCase[] = [
  // 4.6.2.
  { name: '4.6.2 ban with the ban level, target below', room: { members: { [BOB]: 'join', [CAROL]: 'join' } }, event: member(BOB, CAROL, 'ban'), expect: true },
  { name: '4.6.2 a user with no membership may be banned', room: { members: { [BOB]: 'join' } }, event: member(BOB, DAVE, 'ban'), expect: true },
  { name: '4.6.2 a banned user may be banned again', room: { members: { [BOB]: 'join', [CAROL]: 'ban' } }, event: member(BOB, CAROL, 'ban'), expect: true },
  // 4.6.3.
  { name: '4.6.3 below the ban level is refused', room: { members: { [CAROL]: 'join', [ERIN]: 'join' } }, event: member(CAROL, ERIN, 'ban'), expect: /ban: sender lacks the ban level/ },
  { name: '4.6.3 a target of higher level is refused', room: { members: { [BOB]: 'join' } }, event: member(BOB, ALICE, 'ban'), expect: /ban: sender lacks the ban level or is not above/ },
  {
    name: '4.6.3 a target of equal level is refused',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50, [ERIN]: 50 } }, members: { [BOB]: 'join' } },
    event: member(BOB, ERIN, 'ban'),
    expect: /not above/,
  },
  {
    name: '4.6.3 a raised ban level is not met',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, ban: 60 }, members: { [BOB]: 'join', [CAROL]: 'join' } },
    event: member(BOB, CAROL, 'ban'),
    expect: /lacks the ban level/,
  },
  {
    name: '4.6.2 a lowered ban level is met',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50, [CAROL]: 10 }, ban: 10 }, members: { [CAROL]: 'join', [ERIN]: 'join' } },
    event: member(CAROL, ERIN, 'ban'),
    expect: true,
  },
  // 4.6.1.
  { name: '4.6.1 a sender who is not joined may not ban', room: { members: { [BOB]: 'leave' } }, event: member(BOB, CAROL, 'ban'), expect: /ban: sender is not joined/ },
  { name: '4.6.1 one cannot ban oneself into a room one is not in', event: member(CAROL, CAROL, 'ban'), expect: /ban: sender is not joined/ },
];

runAuthCases('membership shape', shape);
runAuthCases('invites', invites);
runAuthCases('leaves, kicks and unbans', leaves);
runAuthCases('bans', bans);
