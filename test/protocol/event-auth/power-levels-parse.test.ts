// Reading m.room.power_levels per room version: value forms, defaults, lookups.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  notificationPowerLevel,
  parsePowerLevels,
  parsePowerLevelValue,
  powerLevelsContentProblem,
  powerLevelsFromEvents,
  requiredPowerLevelForEvent,
  roomCreator,
  userPowerLevel,
} from '../../../src/protocol/power-levels.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomVersion } from '../../../src/protocol/room-versions.js';
import { EventFactory } from '../../support/room-events.js';
import { ALICE, BOB, CAROL, VERSIONS_BEFORE_12 } from './room.js';

type Reading = number | undefined;
// [value, v1–v5, v6–v9, v10+]
const valueTable: Array<[unknown, Reading, Reading, Reading]> = [
  [50, 50, 50, 50],
  [-7, -7, -7, -7],
  [0, 0, 0, 0],
  ['50', 50, 50, undefined],
  ['-10', -10, -10, undefined],
  ['+100', 100, 100, undefined],
  ['000100', 100, 100, undefined],
  [' 100 ', 100, 100, undefined],
  [' \t-0042\n', -42, -42, undefined],
  ['5.5', undefined, undefined, undefined],
  ['1e3', undefined, undefined, undefined],
  ['0x10', undefined, undefined, undefined],
  ['50 50', undefined, undefined, undefined],
  ['+-5', undefined, undefined, undefined],
  ['', undefined, undefined, undefined],
  ['abc', undefined, undefined, undefined],
  [50.57, 50, undefined, undefined],
  [-3.9, -3, undefined, undefined],
  [5.114698e4, 51146, undefined, undefined],
  [Number.POSITIVE_INFINITY, undefined, undefined, undefined],
  [Number.NaN, undefined, undefined, undefined],
  [2 ** 53, 2 ** 53, undefined, undefined],
  [true, undefined, undefined, undefined],
  [null, undefined, undefined, undefined],
  [[50], undefined, undefined, undefined],
  [{ level: 50 }, undefined, undefined, undefined],
];

const era = (v: RoomVersion): 1 | 2 | 3 => (v.enforceIntPowerLevels ? 3 : v.strictCanonicalJson ? 2 : 1);

describe('parsePowerLevelValue', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}`, () => {
      for (const row of valueTable) {
        const expected = row[era(version)];
        assert.equal(parsePowerLevelValue(row[0], version), expected, `${String(row[0])} in v${version.id}`);
      }
    });
  }
});

describe('defaults without a power_levels event', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}`, () => {
      const levels = parsePowerLevels(undefined, version, ALICE);
      assert.equal(userPowerLevel(levels, ALICE), 100);
      assert.equal(userPowerLevel(levels, BOB), 0);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.name', true), 50);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.message', false), 0);
      assert.deepEqual(
        [levels.ban, levels.kick, levels.redact, levels.invite, levels.usersDefault],
        [50, 50, 50, 0, 0],
      );
      assert.equal(notificationPowerLevel(levels, 'room'), 50);
      // No creator known: nobody is raised.
      assert.equal(userPowerLevel(parsePowerLevels(undefined, version), ALICE), 0);
    });
  }
});

describe('the creator', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}: ${version.implicitRoomCreator ? 'the create sender' : 'content.creator'}`, () => {
      const create = new EventFactory().make({
        type: 'm.room.create',
        sender: ALICE,
        state_key: '',
        content: { creator: BOB },
      });
      const expected = version.implicitRoomCreator ? ALICE : BOB;
      assert.equal(roomCreator(create, version), expected);
      const levels = powerLevelsFromEvents(undefined, create, version);
      assert.equal(userPowerLevel(levels, expected), 100);
      assert.equal(userPowerLevel(levels, expected === ALICE ? BOB : ALICE), 0);
      assert.equal(roomCreator(undefined, version), undefined);
    });
  }
});

describe('levels from a power_levels event', () => {
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}: given values and the defaults of absent ones`, () => {
      const levels = parsePowerLevels(
        {
          users: { [ALICE]: 100, [BOB]: 40 },
          users_default: 5,
          events: { 'm.room.name': 30, 'm.room.message': 7 },
          events_default: 2,
          notifications: { room: 20, other: 90 },
        },
        version,
        CAROL, // the creator does not matter once the event exists
      );
      assert.equal(userPowerLevel(levels, BOB), 40);
      assert.equal(userPowerLevel(levels, CAROL), 5);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.name', true), 30);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.topic', true), 50);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.message', false), 7);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.reaction', false), 2);
      // A type listed in events is its level whether sent as state or not.
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.name', false), 30);
      assert.equal(notificationPowerLevel(levels, 'room'), 20);
      assert.equal(notificationPowerLevel(levels, 'other'), 90);
      assert.equal(notificationPowerLevel(levels, 'unlisted'), 50);
      assert.deepEqual([levels.ban, levels.kick, levels.redact, levels.invite], [50, 50, 50, 0]);
    });

    test(`room version ${version.id}: string values ${version.enforceIntPowerLevels ? 'read as absent' : 'count'}`, () => {
      const levels = parsePowerLevels(
        { users: { [BOB]: '75' }, ban: '10', events: { 'm.room.name': ' 20 ' }, notifications: { room: '5' } },
        version,
      );
      const stringy = !version.enforceIntPowerLevels;
      assert.equal(userPowerLevel(levels, BOB), stringy ? 75 : 0);
      assert.equal(levels.ban, stringy ? 10 : 50);
      assert.equal(requiredPowerLevelForEvent(levels, 'm.room.name', true), stringy ? 20 : 50);
      assert.equal(notificationPowerLevel(levels, 'room'), stringy ? 5 : 50);
    });
  }
});

describe('powerLevelsContentProblem', () => {
  // [content, v1–v5, v6–v9, v10+]: true when acceptable.
  const table: Array<[string, JsonObject, boolean, boolean, boolean]> = [
    ['integers throughout', { users: { [ALICE]: 100 }, ban: 50, events: { 'm.room.name': 50 }, notifications: { room: 50 } }, true, true, true],
    ['no users at all', { ban: 50 }, true, true, true],
    ['an empty object', {}, true, true, true],
    ['a string user level', { users: { [ALICE]: '100' } }, true, true, false],
    ['a float user level', { users: { [ALICE]: 50.5 } }, true, false, false],
    ['a non-numeric user level', { users: { [ALICE]: 'high' } }, false, false, false],
    ['a null user level', { users: { [ALICE]: null } }, false, false, false],
    ['a users key that is no user id', { users: { alice: 100 } }, false, false, false],
    ['a users key without a server name', { users: { '@alice': 100 } }, false, false, false],
    ['users that is not an object', { users: [ALICE] }, false, false, false],
    ['a string ban', { ban: '50' }, true, true, false],
    ['a null kick', { kick: null }, true, true, false],
    ['a string events entry', { events: { 'm.room.name': '50' } }, true, true, false],
    ['events that is not an object', { events: 'all' }, true, true, false],
    ['a string notifications entry', { notifications: { room: '50' } }, true, true, false],
    ['an infinite redact level', { redact: Number.POSITIVE_INFINITY }, false, false, false],
    ['an infinite events entry', { events: { x: Number.NEGATIVE_INFINITY } }, false, false, false],
  ];
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}`, () => {
      for (const [name, content, ...ok] of table) {
        const problem = powerLevelsContentProblem(content, version);
        assert.equal(problem === undefined, ok[era(version) - 1], `${name} in v${version.id}: ${problem}`);
      }
    });
  }
});
