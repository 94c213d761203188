// What a sync costs in statements, on SQLite and PostgreSQL: an incremental sync after a send reads
// nothing, for a user in 80 rooms as for one in 40, and an initial sync reads rooms in batches,
// not one by one.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SyncRequest } from '../../src/sync/sync-service.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { eventually } from '../support/eventually.js';
import { statements } from '../support/statements.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`sync cost on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });

    test('incremental syncs cost the same in 40 rooms as in 80; initial syncs read in batches', async () => {
      const { rooms, sync, pushActions, search } = hs.server.services;
      const db = hs.server.core.db;
      // The push-rule pass and the search indexer read and write as events come, through the same
      // handle: let them finish before a sync is measured.
      const evaluated = async () => {
        const position = hs.server.core.notifier.current().events;
        await eventually(() => (pushActions.window()?.upTo ?? -1) >= position, 'the push-rule pass catches up');
        await eventually(() => search.settled(position), 'the search indexer catches up');
      };
      const heavy = await hs.registerUser('heavy', 'secret');
      const other = await hs.registerUser('other', 'secret');
      const actor = (u: typeof heavy) => ({ userId: u.userId, deviceId: u.deviceId });
      const roomIds: string[] = [];
      const addRooms = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const { roomId } = await rooms.createRoom(actor(other), { preset: 'public_chat' });
          await rooms.join(actor(heavy), roomId);
          const hello = await rooms.sendMessage(actor(other), roomId, 'm.room.message', { msgtype: 'm.text', body: `hello ${i}` });
          // A thread, and a reference to its reply (in the thread too: found through the reply).
          const reply = await rooms.sendMessage(actor(other), roomId, 'm.room.message', { msgtype: 'm.text', body: `reply ${i}`, 'm.relates_to': { rel_type: 'm.thread', event_id: hello } });
          await rooms.sendMessage(actor(other), roomId, 'm.room.message', { msgtype: 'm.text', body: `see ${i}`, 'm.relates_to': { rel_type: 'm.reference', event_id: reply } });
          roomIds.push(roomId);
        }
      };
      const req = (since?: string, filter?: string): SyncRequest => ({ userId: heavy.userId, deviceId: heavy.deviceId, setPresence: 'offline', ...(since !== undefined ? { since } : {}), ...(filter !== undefined ? { filter } : {}) });
      const threaded = JSON.stringify({ room: { timeline: { unread_thread_notifications: true } } });

      /** Statements of an initial sync, and of incremental syncs with one new message each. */
      const measure = async (filter?: string) => {
        let token = '';
        await evaluated();
        const initial = await statements(db, async () => {
          const s = await sync.sync(req(undefined, filter));
          token = s.next_batch;
          if (filter !== undefined) assert.equal(Object.values(s.rooms.join).filter((r) => r.unread_thread_notifications !== undefined).length, roomIds.length, 'every room has a thread with news');
        });
        const incremental: number[] = [];
        for (let i = 0; i < 3; i++) {
          await rooms.sendMessage(actor(other), roomIds[(i * 7) % roomIds.length]!, 'm.room.message', { msgtype: 'm.text', body: `news ${i}` });
          await evaluated();
          incremental.push(
            await statements(db, async () => {
              const s = await sync.sync(req(token, filter));
              assert.equal(Object.keys(s.rooms.join).length, 1);
              token = s.next_batch;
            }),
          );
        }
        const quiet = await statements(db, () => sync.sync(req(token, filter)));
        return { initial, incremental: Math.max(...incremental.slice(1)), quiet };
      };

      await addRooms(40);
      const forty = await measure();
      const fortyThreaded = await measure(threaded);
      await addRooms(40);
      const eighty = await measure();
      const eightyThreaded = await measure(threaded);
      // Counts per thread read nothing per room or per thread either.
      assert.equal(eightyThreaded.incremental, 0, `threaded incremental: ${JSON.stringify({ fortyThreaded, eightyThreaded })}`);
      assert.ok(eightyThreaded.quiet <= 1, `threaded, nothing new: ${JSON.stringify({ fortyThreaded, eightyThreaded })}`);
      assert.ok(eightyThreaded.initial <= fortyThreaded.initial + 20, `threaded initial: ${JSON.stringify({ fortyThreaded, eightyThreaded })}`);
      assert.equal(eighty.incremental, forty.incremental, `incremental: ${JSON.stringify({ forty, eighty })}`);
      // The range a send wakes a sync for, the event, the room's facts and what its unread count
      // needs are all in memory.
      assert.equal(eighty.incremental, 0, `incremental: ${JSON.stringify({ forty, eighty })}`);
      assert.ok(eighty.quiet <= 1, `nothing new: ${JSON.stringify({ forty, eighty })}`);
      // Twice the rooms: one more chunk of 50 rooms (some ten statements, and the chunk's bundled
      // aggregations and the threads of its notifying references some five), not 40 more. The facts
      // of rooms no earlier read has cached take one statement more, however many they are.
      assert.ok(eighty.initial <= forty.initial + 20, `initial: ${JSON.stringify({ forty, eighty })}`);
    });
  });
}
