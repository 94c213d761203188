import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { MAX_TYPING_TIMEOUT_MS, TypingService } from '../../src/users/typing.js';
import { assertDoesNotWake, assertWakes, FakeRooms } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

const alice = '@alice:hs';
const bob = '@bob:hs';
const carol = '@carol:hs';
const r1 = '!r1:hs';
const r2 = '!r2:hs';

describe('typing', () => {
  const setup = () => {
    const notifier = new InProcessBus();
    const rooms = new FakeRooms().join(r1, alice, bob).join(r2, alice, carol);
    const typing = new TypingService({ notifier, isJoined: rooms.isJoined });
    return { notifier, rooms, typing };
  };

  test('starting and stopping wakes the room and moves the counter; typingSince reports changed rooms', async () => {
    const { notifier, typing } = setup();
    const start = typing.currentPosition();
    assert.ok(start >= Date.now() - 5000, 'the counter starts at the clock so it increases across restarts');
    await assertWakes(notifier, { userId: bob, roomIds: [r1] }, () => typing.setTyping(alice, alice, r1, true, 10_000));
    assert.equal(typing.currentPosition(), start + 1);
    assert.equal(notifier.current().typing, start + 1);
    assert.deepEqual(typing.typingIn(r1), [alice]);
    assert.deepEqual(typing.typingSince([r1, r2], start), new Map([[r1, [alice]]]));
    assert.deepEqual(typing.typingSince([r1, r2], start + 1), new Map());
    assert.deepEqual(typing.typingSince([r2], start), new Map());

    // Renewing changes nothing a client sees.
    await assertDoesNotWake(notifier, { userId: bob, roomIds: [r1] }, () => typing.setTyping(alice, alice, r1, true, 10_000));
    assert.equal(typing.currentPosition(), start + 1);

    await typing.setTyping(bob, bob, r1, true);
    assert.deepEqual(typing.typingSince([r1], start + 1), new Map([[r1, [alice, bob]]]));
    await assertWakes(notifier, { userId: bob, roomIds: [r1] }, () => typing.setTyping(alice, alice, r1, false));
    assert.deepEqual(typing.typingSince([r1], start + 2), new Map([[r1, [bob]]]));
    // Stopping when not typing is a no-op.
    await typing.setTyping(alice, alice, r1, false);
    assert.equal(typing.currentPosition(), start + 3);
    // An initial sync (position 0) only sees rooms where someone types.
    await typing.setTyping(bob, bob, r1, false);
    assert.deepEqual(typing.typingSince([r1, r2], 0), new Map());
    await typing.setTyping(carol, carol, r2, true);
    assert.deepEqual(typing.typingSince([r1, r2], 0), new Map([[r2, [carol]]]));
    typing.close();
  });

  test('typing ends by itself after the timeout, waking the room', async () => {
    const { notifier, typing } = setup();
    await typing.setTyping(alice, alice, r1, true, 40);
    const p = typing.currentPosition();
    const waiting = notifier.wait({ userId: bob, roomIds: [r1], since: notifier.current(), timeoutMs: 2000 });
    assert.equal(await waiting, true);
    assert.deepEqual(typing.typingIn(r1), []);
    assert.deepEqual(typing.typingSince([r1], p), new Map([[r1, []]]));
    typing.close();
  });

  test('a renewal pushes the timeout back', async () => {
    const { typing } = setup();
    await typing.setTyping(alice, alice, r1, true, 60);
    await sleep(35);
    await typing.setTyping(alice, alice, r1, true, 200);
    await sleep(50);
    assert.deepEqual(typing.typingIn(r1), [alice]);
    typing.close();
  });

  test('errors: another user 403, not joined 403, bad timeout 400', async () => {
    const { typing } = setup();
    await assert.rejects(typing.setTyping(bob, alice, r1, true), rejects('M_FORBIDDEN', 403));
    await assert.rejects(typing.setTyping(bob, bob, r2, true), rejects('M_FORBIDDEN', 403));
    await assert.rejects(typing.setTyping(alice, alice, r1, true, -1), rejects('M_INVALID_PARAM', 400));
    await assert.rejects(typing.setTyping(alice, alice, r1, true, 1.5), rejects('M_INVALID_PARAM', 400));
    assert.deepEqual(typing.typingIn(r1), []);
    typing.close();
  });

  test('timeouts are capped at 120 s', async () => {
    const notifier = new InProcessBus();
    const rooms = new FakeRooms().join(r1, alice);
    const seen: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    // Observe the timer the service asks for.
    globalThis.setTimeout = ((fn: () => void, ms: number) => {
      seen.push(ms);
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout;
    try {
      const typing = new TypingService({ notifier, isJoined: rooms.isJoined });
      await typing.setTyping(alice, alice, r1, true, 10 * 60_000);
      await typing.setTyping(alice, alice, r1, true);
      typing.close();
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    assert.deepEqual(seen, [MAX_TYPING_TIMEOUT_MS, 30_000]);
  });
});
