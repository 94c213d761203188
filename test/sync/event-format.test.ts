// A sync filter's event_format "federation": timeline and state events come as PDUs (auth and
// prev events, hashes, signatures, depth) with event_id and unsigned; over HTTP on both backends.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, timelineOf } from './sync-client.js';

const PDU_KEYS = ['auth_events', 'prev_events', 'hashes', 'signatures', 'depth', 'room_id', 'event_id', 'sender', 'type', 'content', 'origin_server_ts', 'unsigned'];

for (const { backend, skip } of await serverBackends()) {
  describe(`sync event_format on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: Client;
    let roomId: string;
    let messageId: string;

    before(async () => {
      alice = new Client(hs, await hs.registerUser('alice', 'secret'));
      roomId = await alice.createRoom({ name: 'formats' });
      messageId = await alice.text(roomId, 'hello');
    });

    test('"federation" serves events in their PDU form', async () => {
      const sync = await alice.sync({ filter: { event_format: 'federation', room: { timeline: { limit: 3 } } } });
      const timeline = timelineOf(sync, roomId);
      const message = timeline.find((e: any) => e.event_id === messageId);
      assert.ok(message, JSON.stringify(timeline));
      for (const key of PDU_KEYS) assert.ok(key in message, `timeline event lacks ${key}`);
      assert.equal(message.room_id, roomId);
      assert.equal(typeof message.hashes.sha256, 'string');
      assert.ok(Array.isArray(message.auth_events) && message.auth_events.length > 0);
      assert.equal(typeof message.unsigned.age, 'number');
      assert.equal(typeof message.unsigned.transaction_id, 'string', 'the sending device still sees its transaction id');
      const state = sync.rooms.join[roomId].state.events;
      assert.ok(state.length > 0);
      for (const e of state) for (const key of ['auth_events', 'prev_events', 'hashes', 'signatures', 'depth', 'event_id', 'state_key']) assert.ok(key in e, `state event lacks ${key}`);
    });

    test('"client" (and no event_format) serves client events', async () => {
      for (const filter of [{ event_format: 'client' }, {}]) {
        const sync = await alice.sync({ filter: { ...filter, room: { timeline: { limit: 3 } } } });
        const message = timelineOf(sync, roomId).find((e: any) => e.event_id === messageId);
        assert.ok(message);
        for (const key of ['auth_events', 'prev_events', 'hashes', 'signatures', 'depth', 'room_id']) assert.ok(!(key in message), `client event has ${key}`);
      }
    });
  });
}
