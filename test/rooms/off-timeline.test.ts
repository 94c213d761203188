// Events off the timeline and backfilled events, as clients see a room that holds them: rejected,
// soft-failed and outlier events are stored but never served by position or by id, nor taken for
// a state entry's history; a backfilled event (negative position) is older than everything else,
// and the pagination tokens around it are negative.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventStatus } from '../../src/storage/schema.js';
import { stateEntryHistory } from '../../src/storage/rooms/events.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');

for (const backend of await storageBackends()) {
  describe(`events off the timeline, and backfilled ones, on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    test('only timeline events are served; backfilled ones come last going back, with negative tokens', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: 'world_readable' } }],
      });
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'real' });
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'live' });
      const roomNid = (await h.rooms.reader.roomInfo(roomId))!.nid;

      let n = 0;
      const store = async (status: EventStatus, position: number | null, type: string, content: Record<string, unknown>, stateKey?: string) => {
        const eventId = `$stored${++n}`;
        const pdu = { type, room_id: roomId, sender: alice.userId, content, origin_server_ts: 1, depth: 1, prev_events: [], auth_events: [], ...(stateKey !== undefined ? { state_key: stateKey } : {}) };
        await h.database.db
          .insertInto('events')
          .values({
            event_id: eventId, room_nid: roomNid, type, state_key: stateKey ?? null, sender: alice.userId, origin_server_ts: 1, depth: 1, stream_ordering: position,
            status, json: JSON.stringify(pdu), unsigned_json: null, redacts: null, redacted_by: null, rejection_reason: status === 'rejected' ? 'test' : null,
            state_before_nid: null, state_after_nid: null, txn_device_id: null, txn_id: null,
          })
          .execute();
        return eventId;
      };
      const softFailed = await store('soft_failed', null, 'm.room.message', { body: 'soft' });
      const rejected = await store('rejected', null, 'm.room.topic', { topic: 'rejected' }, '');
      const outlier = await store('outlier', null, 'm.room.topic', { topic: 'outlier' }, '');
      const backfilled = await store('timeline', -1, 'm.room.message', { body: 'old' });
      const older = await store('timeline', -2, 'm.room.message', { body: 'older' });

      const back = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 100 });
      const ids = back.chunk.map((e) => e.event_id);
      for (const hidden of [softFailed, rejected, outlier]) assert.ok(!ids.includes(hidden), hidden);
      assert.deepEqual(ids.slice(-2), [backfilled, older]);
      assert.equal(back.chunk[0]!.content['body'], 'live');
      assert.equal(back.end, 't-3');
      // `t-1` is just after the event at -1.
      assert.deepEqual((await h.rooms.messages(alice, roomId, { dir: 'b', limit: 10, from: 't-1' })).chunk.map((e) => e.event_id), [backfilled, older]);
      assert.deepEqual((await h.rooms.messages(alice, roomId, { dir: 'b', limit: 10, from: 't-2' })).chunk.map((e) => e.event_id), [older]);
      assert.deepEqual((await h.rooms.messages(alice, roomId, { dir: 'b', limit: 10, from: back.end! })).chunk, []);

      const forward = await h.rooms.messages(alice, roomId, { dir: 'f', limit: 2 });
      assert.equal(forward.start, 't-3');
      assert.deepEqual(forward.chunk.map((e) => e.event_id), [older, backfilled]);

      for (const hidden of [softFailed, rejected, outlier]) await rejectsWith(h.rooms.getEvent(alice, roomId, hidden), 404, 'M_NOT_FOUND');
      assert.equal((await h.rooms.getEvent(alice, roomId, backfilled)).content['body'], 'old');
      assert.equal((await h.rooms.reader.event(softFailed))?.status, 'soft_failed');
      assert.equal((await h.rooms.reader.event(outlier))?.streamOrdering, undefined);

      // A state entry's history is of timeline events only.
      const topics = await stateEntryHistory(h.database.db, roomNid, 'm.room.topic', '');
      assert.deepEqual(topics.map((e) => JSON.parse(e.json).content.topic), ['real']);
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.topic', ''), { topic: 'real' });
    });
  });
}
