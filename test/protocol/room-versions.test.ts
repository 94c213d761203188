import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_ROOM_VERSION,
  getRoomVersion,
  roomVersions,
  roomVersionsCapability,
} from '../../src/protocol/room-versions.js';

test('versions 1 to 12 exist, default 10', () => {
  assert.deepEqual(Object.keys(roomVersions).sort((a, b) => Number(a) - Number(b)), [
    '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12',
  ]);
  assert.equal(DEFAULT_ROOM_VERSION, '10');
  assert.equal(getRoomVersion('13'), undefined);
  assert.equal(getRoomVersion('toString'), undefined);
});

test('statuses: v1–v5 legacy, v10 current, v11 stable since v12 is the latest', () => {
  for (const id of ['1', '2', '3', '4', '5']) assert.equal(roomVersions[id]!.status, 'legacy');
  assert.equal(roomVersions['6']!.status, 'stable');
  assert.equal(roomVersions['9']!.status, 'stable');
  assert.equal(roomVersions['10']!.status, 'current');
  assert.equal(roomVersions['11']!.status, 'stable');
  assert.equal(roomVersions['12']!.status, 'latest');
});

test('rule differences land on the right versions', () => {
  const v = (id: string) => roomVersions[id]!;
  assert.equal(v('1').stateResolution, 'v1');
  assert.equal(v('2').stateResolution, 'v2');
  assert.equal(v('2').eventIdFormat, 'v1');
  assert.equal(v('3').eventIdFormat, 'v3');
  assert.equal(v('4').eventIdFormat, 'v4');
  assert.equal(v('4').enforceKeyValidity, false);
  assert.equal(v('5').enforceKeyValidity, true);
  assert.equal(v('5').strictCanonicalJson, false);
  assert.equal(v('6').strictCanonicalJson, true);
  assert.equal(v('5').specialCaseAliases, true);
  assert.equal(v('6').specialCaseAliases, false);
  assert.equal(v('6').knockJoinRule, false);
  assert.equal(v('7').knockJoinRule, true);
  assert.equal(v('8').restrictedJoinRule, true);
  assert.equal(v('8').restrictedJoinRuleFix, false);
  assert.equal(v('9').restrictedJoinRuleFix, true);
  assert.equal(v('9').knockRestrictedJoinRule, false);
  assert.equal(v('10').knockRestrictedJoinRule, true);
  assert.equal(v('10').enforceIntPowerLevels, true);
  assert.equal(v('10').implicitRoomCreator, false);
  assert.equal(v('11').implicitRoomCreator, true);
  assert.equal(v('11').updatedRedactionRules, true);
  assert.equal(v('11').createEventRoomId, false);
  assert.equal(v('11').privilegedCreators, false);
  assert.equal(v('11').stateResolution, 'v2');
  assert.equal(v('12').createEventRoomId, true);
  assert.equal(v('12').privilegedCreators, true);
  assert.equal(v('12').stateResolution, 'v2.1');
  assert.equal(v('12').updatedRedactionRules, true);
});

test('capability advertises every version as stable with default 10', () => {
  const cap = roomVersionsCapability();
  assert.equal(cap.default, '10');
  assert.equal(Object.keys(cap.available).length, 12);
  assert.ok(Object.values(cap.available).every((s) => s === 'stable'));
});
