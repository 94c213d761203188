import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBase64 } from '../../src/protocol/base64.js';
import type { Pdu } from '../../src/protocol/events.js';
import { referenceHash } from '../../src/protocol/hashes.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { loadRoomHead } from '../../src/rooms/head-loader.js';
import { RoomService } from '../../src/rooms/service.js';
import { StateKeyNids } from '../../src/storage/rooms/state-snapshots.js';
import { storageBackends } from '../support/databases.js';
import { restartedRooms, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');

for (const backend of await storageBackends()) {
  describe(`loading a room head on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);
    const restarted = () => restartedRooms(h);
    const stateIds = async (rooms: RoomService, roomId: string) =>
      new Map((await rooms.state(alice, roomId)).map((e) => [`${e.type}|${e.state_key}`, e.event_id]));

    test('a head loads without filling the shared event cache, and building on it goes on', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      for (let i = 0; i < 60; i++) await h.rooms.join(user(`m${i}`), roomId);
      for (let i = 0; i < 60; i++) await h.rooms.sendState(alice, roomId, 'x.key', `k${i}`, { i });

      const cold = await restarted();
      const before = cold.reader.cacheUsage;
      const head = await loadRoomHead(h.database.db, cold.reader, new StateKeyNids(), roomId);
      assert.deepEqual(cold.reader.cacheUsage, before);
      assert.equal(head!.stateRefs.size, (await stateIds(h.rooms, roomId)).size);
      assert.equal(head!.membership(user('m7').userId), 'join');

      // More state through the restarted service: its snapshots build on the chain it loaded.
      for (let i = 0; i < 40; i++) await cold.sendState(alice, roomId, 'x.key', `k${i % 7}`, { again: i });
      for (let i = 60; i < 100; i++) await cold.join(user(`m${i}`), roomId);
      const expected = await stateIds(cold, roomId);
      assert.deepEqual(await stateIds(await restarted(), roomId), expected);
      assert.deepEqual(await cold.stateEvent(alice, roomId, 'x.key', 'k3'), { again: 38 });
      assert.equal(expected.size, head!.stateRefs.size + 40);
    });

    test('in a v1 room the loaded references carry the events reference hashes', async () => {
      const version = getRoomVersion('1')!;
      const { roomId } = await h.rooms.createRoom(alice, { roomVersion: '1' });
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 't' });
      const cold = await restarted();
      const head = (await loadRoomHead(h.database.db, cold.reader, new StateKeyNids(), roomId))!;
      const rows = await h.database.db.selectFrom('events').select(['event_id', 'json']).execute();
      const hashOf = new Map(rows.map((r) => [r.event_id, encodeBase64(referenceHash(JSON.parse(r.json) as Pdu, version))]));
      for (const ref of [...head.stateRefs.values(), ...head.extremities]) assert.equal(ref.referenceHash, hashOf.get(ref.eventId));
      // The next event cites them.
      await cold.sendMessage(alice, roomId, 'm.room.message', { body: 'after a restart' });
      const messages = await cold.messages(alice, roomId, { dir: 'b', limit: 1 });
      assert.equal(messages.chunk[0]!.content.body, 'after a restart');
    });
  });
}
