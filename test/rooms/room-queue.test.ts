import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RoomQueue } from '../../src/rooms/room-queue.js';

describe('room queue', () => {
  it('runs a task on an idle room within the call that queued it', async () => {
    const queue = new RoomQueue();
    let ran = false;
    const result = queue.run('!a:x', () => {
      ran = true;
      return 1;
    });
    assert.equal(ran, true);
    assert.equal(await result, 1);
    assert.equal(queue.busyRooms, 0);
  });

  it("runs one room's tasks one at a time, in order, while another room goes ahead", async () => {
    const queue = new RoomQueue();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = queue.run('!a:x', async () => {
      log.push('a1 start');
      await gate;
      log.push('a1 end');
    });
    const second = queue.run('!a:x', () => {
      log.push('a2');
    });
    const other = queue.run('!b:x', () => {
      log.push('b1');
    });
    await other;
    assert.deepEqual(log, ['a1 start', 'b1']);
    release();
    await Promise.all([first, second]);
    assert.deepEqual(log, ['a1 start', 'b1', 'a1 end', 'a2']);
    await new Promise((r) => setImmediate(r));
    assert.equal(queue.busyRooms, 0);
  });

  it('a failing task fails alone: the next one still runs', async () => {
    const queue = new RoomQueue();
    const failing = queue.run('!a:x', async () => {
      throw new Error('boom');
    });
    const next = queue.run('!a:x', () => 'ok');
    await assert.rejects(failing, /boom/);
    assert.equal(await next, 'ok');
    await assert.rejects(
      queue.run('!c:x', () => {
        throw new Error('sync boom');
      }),
      /sync boom/,
    );
  });
});
