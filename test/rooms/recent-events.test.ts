import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentEvents } from '../../src/rooms/recent-events.js';
import type { StreamEvent } from '../../src/storage/sync/events.js';

const at = (position: number, roomNid = 1): StreamEvent => ({ roomNid, eventNid: position * 10, position, type: 'm.room.message', stateKey: undefined });
const positions = (events: readonly StreamEvent[] | undefined) => events?.map((e) => e.position);

describe('the recent stretch of the events stream', () => {
  test('answers ranges inside what it holds, and nothing outside', () => {
    const log = new RecentEvents(10);
    assert.deepEqual(positions(log.range(10, 10, 5)), []);
    log.add([at(11), at(12)]);
    log.add([at(13, 2)]);
    assert.deepEqual(positions(log.range(10, 13, 100)), [11, 12, 13]);
    assert.deepEqual(positions(log.range(11, 12, 100)), [12]);
    assert.deepEqual(positions(log.range(12, 13, 100)), [13]);
    assert.deepEqual(positions(log.range(10, 13, 2)), [11, 12]);
    assert.equal(log.range(9, 13, 100), undefined, 'before the start');
    assert.equal(log.range(12, 14, 100), undefined, 'past the last commit');
  });

  test('starts over after a position it never saw (another writer on the stream)', () => {
    const log = new RecentEvents(10);
    log.add([at(11), at(12)]);
    log.add([at(15), at(16)]);
    assert.equal(log.range(12, 16, 100), undefined, '13 and 14 were written elsewhere');
    assert.deepEqual(positions(log.range(14, 16, 100)), [15, 16]);
  });

  test('drops its older half past its bound, and says so for ranges reaching there', () => {
    const log = new RecentEvents(0, 8);
    for (let p = 1; p <= 9; p++) log.add([at(p)]);
    // 9 entries > 8: the newest 4 are kept, so (5, 9] is held and (4, 9] is not.
    assert.deepEqual(positions(log.range(5, 9, 100)), [6, 7, 8, 9]);
    assert.equal(log.range(4, 9, 100), undefined);
    log.add([at(10), at(11)]);
    assert.deepEqual(positions(log.range(5, 11, 100)), [6, 7, 8, 9, 10, 11]);
  });

  test('refuses events out of stream order', () => {
    const log = new RecentEvents(5);
    assert.throws(() => log.add([at(5)]), /out of order/);
    log.add([at(6)]);
    assert.throws(() => log.add([at(6)]), /out of order/);
  });
});
