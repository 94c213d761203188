// Sync tokens: the version 1 form (`s` and seven positions) issued since the first release keeps
// decoding, and every other leading letter is refused until a version claims it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeSyncToken, encodeSyncToken, isSyncToken } from '../../src/streams/token.js';
import { zeroPositions } from '../../src/streams/positions.js';
import { decodeTimelineToken } from '../../src/rooms/tokens.js';
import { HearthError } from '../../src/protocol/errors.js';

const invalidParam = (e: unknown) => e instanceof HearthError && e.errcode === 'M_INVALID_PARAM';

test('sync tokens round-trip and reject garbage with M_INVALID_PARAM', () => {
  const p = { ...zeroPositions(), events: 42, to_device: 7, typing: 3 };
  const token = encodeSyncToken(p);
  assert.equal(token, 's42_3_0_0_0_7_0');
  assert.deepEqual(decodeSyncToken(token), p);
  for (const bad of ['', 's', 'x42_3_0_0_0_7_0', 's1_2_3', 's1_2_3_4_5_6_-7', 's1_2_3_4_5_6_7_8', 's1_2_3_4_5_6_1e3']) {
    assert.throws(() => decodeSyncToken(bad), invalidParam, bad);
  }
});

test('version 1 tokens issued before decode to the positions they name', () => {
  assert.deepEqual(decodeSyncToken('s120_4_9_33_7_2_15'), {
    events: 120,
    typing: 4,
    receipts: 9,
    presence: 33,
    account_data: 7,
    to_device: 2,
    device_lists: 15,
  });
  assert.deepEqual(decodeSyncToken('s0_0_0_0_0_0_0'), zeroPositions());
  assert.equal(decodeSyncToken('s999999999999999_0_0_0_0_0_0').events, 999_999_999_999_999);
  assert.equal(decodeTimelineToken('s120_4_9_33_7_2_15'), 120);
});

test('the leading letter is the version: only s is a sync token today, t is a pagination token', () => {
  assert.equal(isSyncToken('s1_0_0_0_0_0_0'), true);
  assert.equal(isSyncToken('s'), true);
  for (const other of ['t5', 'm1_0_0_0_0_0_0', 'S1_0_0_0_0_0_0', '_1', '', '1_0_0_0_0_0_0']) {
    assert.equal(isSyncToken(other), false, other);
    assert.throws(() => decodeSyncToken(other), invalidParam, other);
  }
  assert.equal(decodeTimelineToken('t5'), 5);
  assert.throws(() => decodeTimelineToken('m1_0_0_0_0_0_0'), invalidParam);
});
