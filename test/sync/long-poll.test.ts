// Long-polling /sync over real HTTP, on SQLite and PostgreSQL: a waiting sync answers within
// 100 ms of a send, answers empty after its timeout when nothing concerns the user, wakes for
// every kind of news, and stops waiting when the client goes away or the server stops.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, startTestServer, type TestServer, useTestServer } from '../support/server.js';
import { Client, clients, enc, timelineOf } from './sync-client.js';

/** Resolves once `count` syncs are waiting on the server's notifier. */
async function waiting(hs: TestServer, count: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (hs.server.core.notifier.waiting < count) {
    if (Date.now() > deadline) throw new Error(`never saw ${count} waiting syncs`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

for (const { backend, skip } of await serverBackends()) {
  describe(`sync long-poll on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('a waiting sync answers within 100 ms of a send', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      let token = (await alice.sync()).next_batch as string;
      const delays: number[] = [];
      for (let i = 0; i < 5; i++) {
        const before = hs.server.core.notifier.waiting;
        const poll = alice.sync({ since: token, timeout: 10_000 });
        await waiting(hs, before + 1);
        const start = performance.now();
        const eventId = await bob.text(roomId, `ping ${i}`);
        const s = await poll;
        delays.push(performance.now() - start);
        assert.deepEqual(timelineOf(s, roomId).map((e: any) => e.event_id), [eventId]);
        token = s.next_batch;
      }
      // The median, so that one turn lost to a busy machine (tests run side by side) is not a
      // failure; every wake still comes long before the 10 s timeout.
      const sorted = [...delays].sort((a, b) => a - b);
      const shown = delays.map((d) => d.toFixed(1)).join(', ');
      assert.ok(sorted[2]! < 100, `send-to-sync delays ${shown} ms`);
      assert.ok(sorted[4]! < 1000, `send-to-sync delays ${shown} ms`);
    });

    test('with nothing for the user, a long-poll answers empty after its timeout', async () => {
      const alice = await user('alice');
      const carol = await user('carol');
      await alice.createRoom({});
      const elsewhere = await carol.createRoom({ preset: 'public_chat' });
      const s1 = await alice.sync();
      const start = performance.now();
      const poll = alice.sync({ since: s1.next_batch, timeout: 400 });
      // Activity in a room alice is not in does not concern her.
      await carol.text(elsewhere, 'not for alice');
      const s2 = await poll;
      const elapsed = performance.now() - start;
      assert.ok(elapsed >= 390 && elapsed < 2000, `answered after ${elapsed.toFixed(0)} ms`);
      assert.deepEqual(s2.rooms, { join: {}, invite: {}, leave: {}, knock: {} });
      assert.deepEqual(s2.presence.events, []);
      // Its token may move past what did not concern her, and then still has nothing for her.
      const s3 = await alice.sync({ since: s2.next_batch });
      assert.deepEqual(s3.rooms, { join: {}, invite: {}, leave: {}, knock: {} });
    });

    test('typing, receipts, account data, to-device and invites wake a waiting sync', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const eventId = await bob.text(roomId, 'hello');
      let token = (await alice.sync()).next_batch as string;
      const cases: [string, () => Promise<unknown>, (s: any) => boolean][] = [
        ['typing', () => bob.ok('PUT', `/rooms/${enc(roomId)}/typing/${enc(bob.userId)}`, { typing: true, timeout: 5000 }), (s) => s.rooms.join[roomId]?.ephemeral.events.some((e: any) => e.type === 'm.typing')],
        ['receipt', () => bob.ok('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, {}), (s) => s.rooms.join[roomId]?.ephemeral.events.some((e: any) => e.type === 'm.receipt')],
        ['account data', () => alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/im.hearth.wake`, { x: 1 }), (s) => s.account_data.events.length === 1],
        ['to-device', () => bob.ok('PUT', `/sendToDevice/m.wake/${Date.now()}`, { messages: { [alice.userId]: { '*': { y: 2 } } } }), (s) => s.to_device.events.length === 1],
        ['invite', async () => bob.invite(await bob.createRoom({}), alice.userId), (s) => Object.keys(s.rooms.invite).length === 1],
      ];
      for (const [what, act, seen] of cases) {
        const before = hs.server.core.notifier.waiting;
        const start = performance.now();
        const poll = alice.sync({ since: token, timeout: 10_000, set_presence: 'offline' });
        await waiting(hs, before + 1);
        await act();
        const s = await poll;
        assert.ok(seen(s), `${what}: ${JSON.stringify(s)}`);
        assert.ok(performance.now() - start < 2000, what);
        token = s.next_batch;
      }
    });

    test('full_state answers at once, whatever the timeout', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const s1 = await alice.sync();
      const start = performance.now();
      const s2 = await alice.sync({ since: s1.next_batch, full_state: true, timeout: 5000 });
      assert.ok(performance.now() - start < 1000);
      assert.ok(s2.rooms.join[roomId].state.events.some((e: any) => e.type === 'm.room.create'));
    });

    test('a client going away ends the wait', async () => {
      const alice = await user('alice');
      await alice.createRoom({});
      const s1 = await alice.sync();
      const before = hs.server.core.notifier.waiting;
      const controller = new AbortController();
      const poll = alice.sync({ since: s1.next_batch, timeout: 60_000 }, { signal: controller.signal }).catch((err: unknown) => err);
      await waiting(hs, before + 1);
      controller.abort();
      assert.ok((await poll) instanceof Error);
      const deadline = Date.now() + 2000;
      while (hs.server.core.notifier.waiting > before) {
        assert.ok(Date.now() < deadline, 'the server still waits for a client that left');
        await new Promise((r) => setTimeout(r, 5));
      }
    });
  });

  describe(`sync long-poll at shutdown on ${backend}`, { skip }, () => {
    test('stopping the server answers waiting syncs at once', async () => {
      const hs = await startTestServer({ backend });
      try {
        const alice = new Client(hs, await hs.registerUser('alice', 'secret'));
        await alice.createRoom({});
        const s1 = await alice.sync();
        const poll = alice.sync({ since: s1.next_batch, timeout: 60_000 });
        await waiting(hs, 1);
        const start = performance.now();
        const closing = hs.close();
        const s2 = await poll;
        // Answered as the server stops, not at the poll's 60 s timeout.
        const answeredIn = performance.now() - start;
        await closing;
        assert.equal(s2.next_batch, s1.next_batch);
        assert.ok(answeredIn < 15_000, `close did not wait for the long-poll (answered after ${answeredIn.toFixed(0)} ms)`);
      } finally {
        await hs.close();
      }
    });
  });
}
