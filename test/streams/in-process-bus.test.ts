import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import type { StreamChange } from '../../src/streams/bus.js';

test('a change for the user or one of their rooms wakes the wait; others do not', async () => {
  const n = new InProcessBus();
  const since = n.current();
  const waiting = n.wait({ userId: '@a:hs', roomIds: ['!r1:hs'], since, timeoutMs: 5000 });
  assert.equal(n.waiting, 1);
  n.notify({ stream: 'events', position: 1, roomIds: ['!other:hs'] });
  n.notify({ stream: 'to_device', position: 1, userIds: ['@b:hs'] });
  assert.equal(n.waiting, 1);
  n.notify({ stream: 'events', position: 2, roomIds: ['!r1:hs'] });
  assert.equal(await waiting, true);
  assert.equal(n.waiting, 0);
  assert.equal(n.current().events, 2);
  const direct = n.wait({ userId: '@a:hs', roomIds: [], since: n.current(), timeoutMs: 5000 });
  n.notify({ stream: 'to_device', position: 2, userIds: ['@a:hs'] });
  assert.equal(await direct, true);
});

test('a change between reading and waiting is not missed', async () => {
  const n = new InProcessBus();
  const since = n.current();
  n.notify({ stream: 'receipts', position: 1, roomIds: ['!r1:hs'] });
  assert.equal(await n.wait({ userId: '@a:hs', roomIds: ['!r1:hs'], since, timeoutMs: 5000 }), true);
  // But an unrelated one is.
  const since2 = n.current();
  n.notify({ stream: 'receipts', position: 2, roomIds: ['!zzz:hs'] });
  assert.equal(await n.wait({ userId: '@a:hs', roomIds: ['!r1:hs'], since: since2, timeoutMs: 20 }), false);
});

test('timeout and cancellation end the wait with false and leave nothing registered', async () => {
  const n = new InProcessBus({ events: 10 });
  assert.equal(n.current().events, 10);
  assert.equal(await n.wait({ userId: '@a:hs', roomIds: ['!r:hs'], since: n.current(), timeoutMs: 10 }), false);
  let cancel: (() => void) | undefined;
  let unregistered = 0;
  const onCancel = (c: () => void) => {
    cancel = c;
    return () => void unregistered++;
  };
  const w = n.wait({ userId: '@a:hs', roomIds: ['!r:hs'], since: n.current(), timeoutMs: 10_000, onCancel });
  assert.equal(n.waiting, 1);
  cancel!();
  assert.equal(await w, false);
  assert.equal(n.waiting, 0);
  assert.equal(unregistered, 1);
  // Cancelled while registering (the client had gone already): over at once, unregistered too.
  const early = n.wait({
    userId: '@a:hs',
    roomIds: ['!r:hs'],
    since: n.current(),
    timeoutMs: 10_000,
    onCancel: (c) => {
      c();
      return () => void unregistered++;
    },
  });
  assert.equal(await early, false);
  assert.equal(n.waiting, 0);
  assert.equal(unregistered, 2);
  // A woken wait unregisters its cancellation as well.
  const woken = n.wait({ userId: '@a:hs', roomIds: ['!r:hs'], since: n.current(), timeoutMs: 10_000, onCancel });
  n.notify({ stream: 'events', position: 11, roomIds: ['!r:hs'] });
  assert.equal(await woken, true);
  assert.equal(unregistered, 3);
  assert.equal(await n.wait({ userId: '@a:hs', roomIds: [], since: n.current(), timeoutMs: 0 }), false);
});

test('a token older than the remembered changes wakes at once', async () => {
  const n = new InProcessBus();
  const since = n.current();
  for (let i = 1; i <= 5000; i++) n.notify({ stream: 'events', position: i, roomIds: ['!busy:hs'] });
  assert.equal(await n.wait({ userId: '@a:hs', roomIds: ['!quiet:hs'], since, timeoutMs: 5000 }), true);
});

test('listeners hear every change of their stream until they stop', () => {
  const n = new InProcessBus();
  const heard: StreamChange[] = [];
  const stop = n.listen('events', (c) => heard.push(c));
  const alsoStop = n.listen('events', (c) => heard.push(c));
  alsoStop();
  n.notify({ stream: 'events', position: 1 });
  n.notify({ stream: 'receipts', position: 1, roomIds: ['!r:hs'] });
  n.notify({ stream: 'events', position: 2, roomIds: ['!r:hs'] });
  stop();
  n.notify({ stream: 'events', position: 3 });
  assert.deepEqual(heard.map((c) => [c.stream, c.position]), [
    ['events', 1],
    ['events', 2],
  ]);
  assert.equal(n.current().events, 3);
});
