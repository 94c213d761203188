import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { HotRoomQueries } from '../../src/storage/rooms/hot-queries.js';
import { insertRoom } from '../../src/storage/rooms/rooms.js';
import type { Schema } from '../../src/storage/schema.js';
import { TxnIds } from '../../src/rooms/txn-ids.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

for (const backend of await storageBackends()) {
  describe(`transaction ids on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let queries: HotRoomQueries;
    let roomNid: number;
    let position = 0;
    let lookups = 0;

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      await migrateToLatest(database.db as never, database.dialect);
      queries = new HotRoomQueries(database.db);
      const lookup = queries.eventIdByTxn.bind(queries);
      queries.eventIdByTxn = (...args) => {
        lookups++;
        return lookup(...args);
      };
      roomNid = await insertRoom(database.db, { roomId: '!txn:hs', version: '10', creator: '@a:hs', createdTs: 0, isPublic: false });
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    const store = async (sender: string, device: string, txn: string): Promise<string> => {
      position++;
      const eventId = `$e${position}`;
      await queries.insertEventRow(database.db, {
        event_id: eventId, room_nid: roomNid, type: 'm.room.message', state_key: null, sender, origin_server_ts: 0, depth: position,
        stream_ordering: position, json: '{}', unsigned_json: null, redacts: null, redacted_by: null, rejected: 0, rejection_reason: null,
        state_before_nid: null, state_after_nid: null, txn_device_id: device, txn_id: txn,
      });
      return eventId;
    };

    test('a device with few stored ids is answered from memory after one read', async () => {
      const a1 = await store('@a:hs', 'A', 'one');
      await store('@a:hs', 'A', 'two');
      const ids = new TxnIds(database.db, queries, { loadLimit: 5 });
      const key = { roomNid, sender: '@a:hs', deviceId: 'A' };
      lookups = 0;
      assert.equal(await (await ids.find(key, 'one')), a1);
      assert.equal(await ids.find(key, 'new'), undefined);
      assert.equal(lookups, 0, 'no per-send lookup for a fully known device');
      // Another device, or another sender with the same device id, is its own.
      assert.equal(await ids.find({ ...key, deviceId: 'B' }, 'one'), undefined);
      assert.equal(await ids.find({ ...key, sender: '@b:hs' }, 'one'), undefined);
    });

    test('a device with more stored ids than the bound is looked up per send', async () => {
      const stored: string[] = [];
      for (let i = 0; i < 6; i++) stored.push(await store('@c:hs', 'C', `c${i}`));
      const ids = new TxnIds(database.db, queries, { loadLimit: 3 });
      const key = { roomNid, sender: '@c:hs', deviceId: 'C' };
      lookups = 0;
      const found = await Promise.all(stored.map((_, i) => ids.find(key, `c${i}`).then((p) => p)));
      for (let i = 0; i < 6; i++) assert.equal(await found[i], stored[i]);
      assert.equal(await ids.find(key, 'unknown'), undefined);
      assert.ok(lookups >= 1);
    });

    test('recorded sends are found; a failed one is forgotten; memory past its bound falls back to lookups', async () => {
      const ids = new TxnIds(database.db, queries, { loadLimit: 10, maxIds: 4 });
      const key = { roomNid, sender: '@d:hs', deviceId: 'D' };
      assert.equal(await ids.find(key, 'x'), undefined);
      const sent = Promise.resolve('$sent');
      ids.record(key, 'x', sent);
      assert.equal(ids.peek(key, 'x'), sent);
      const failing = Promise.reject(new Error('write failed'));
      ids.record(key, 'y', failing);
      await failing.catch(() => undefined);
      await new Promise((r) => setImmediate(r));
      assert.equal(ids.peek(key, 'y'), undefined);
      // Past maxIds the oldest are dropped from memory, and a stored one is then looked up.
      const old = await store('@d:hs', 'D', 'old');
      ids.record(key, 'old', Promise.resolve(old));
      for (let i = 0; i < 5; i++) ids.record(key, `n${i}`, Promise.resolve(`$n${i}`));
      assert.equal(ids.peek(key, 'old'), undefined);
      lookups = 0;
      assert.equal(await (await ids.find(key, 'old')), old);
      assert.equal(lookups, 1);
    });

    test('forgotten devices are read again', async () => {
      const ids = new TxnIds(database.db, queries, { maxDevices: 1 });
      const e = await store('@e:hs', 'E', 'e1');
      const keyE = { roomNid, sender: '@e:hs', deviceId: 'E' };
      assert.equal(await (await ids.find(keyE, 'e1')), e);
      await ids.find({ roomNid, sender: '@f:hs', deviceId: 'F' }, 'f1');
      assert.equal(ids.peek(keyE, 'e1'), undefined, 'E was forgotten');
      assert.equal(await (await ids.find(keyE, 'e1')), e);
    });
  });
}
