import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TxnIds } from '../../src/rooms/txn-ids.js';
import { storageBackends } from '../support/databases.js';
import { useTxnRows } from './txn-rows.js';

for (const backend of await storageBackends()) {
  describe(`transaction ids on ${backend.name}`, { skip: backend.skip }, () => {
    const txns = useTxnRows(backend, '!txn:hs');

    test('a device with few stored ids is answered from memory after one read', async () => {
      const a1 = await txns.store('@a:hs', 'A', 'one');
      await txns.store('@a:hs', 'A', 'two');
      const ids = new TxnIds(txns.database.db, txns.queries, { loadLimit: 5 });
      const key = { roomNid: txns.roomNid, sender: '@a:hs', deviceId: 'A' };
      txns.lookups = 0;
      assert.equal(await (await ids.find(key, 'one')), a1);
      assert.equal(await ids.find(key, 'new'), undefined);
      assert.equal(txns.lookups, 0, 'no per-send lookup for a fully known device');
      // Another device, or another sender with the same device id, is its own.
      assert.equal(await ids.find({ ...key, deviceId: 'B' }, 'one'), undefined);
      assert.equal(await ids.find({ ...key, sender: '@b:hs' }, 'one'), undefined);
    });

    test('a device with more stored ids than the bound is looked up per send', async () => {
      const stored: string[] = [];
      for (let i = 0; i < 6; i++) stored.push(await txns.store('@c:hs', 'C', `c${i}`));
      const ids = new TxnIds(txns.database.db, txns.queries, { loadLimit: 3 });
      const key = { roomNid: txns.roomNid, sender: '@c:hs', deviceId: 'C' };
      txns.lookups = 0;
      const found = await Promise.all(stored.map((_, i) => ids.find(key, `c${i}`).then((p) => p)));
      for (let i = 0; i < 6; i++) assert.equal(await found[i], stored[i]);
      assert.equal(await ids.find(key, 'unknown'), undefined);
      assert.ok(txns.lookups >= 1);
    });

    test('recorded sends are found; a failed one is forgotten; memory past its bound falls back to lookups', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { loadLimit: 10, maxIds: 4 });
      const key = { roomNid: txns.roomNid, sender: '@d:hs', deviceId: 'D' };
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
      const old = await txns.store('@d:hs', 'D', 'old');
      ids.record(key, 'old', Promise.resolve(old));
      for (let i = 0; i < 5; i++) ids.record(key, `n${i}`, Promise.resolve(`$n${i}`));
      assert.equal(ids.peek(key, 'old'), undefined);
      txns.lookups = 0;
      assert.equal(await (await ids.find(key, 'old')), old);
      assert.equal(txns.lookups, 1);
    });

    test('forgotten devices are read again', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { maxDevices: 1 });
      const e = await txns.store('@e:hs', 'E', 'e1');
      const keyE = { roomNid: txns.roomNid, sender: '@e:hs', deviceId: 'E' };
      assert.equal(await (await ids.find(keyE, 'e1')), e);
      await ids.find({ roomNid: txns.roomNid, sender: '@f:hs', deviceId: 'F' }, 'f1');
      assert.equal(ids.peek(keyE, 'e1'), undefined, 'E was forgotten');
      assert.equal(await (await ids.find(keyE, 'e1')), e);
    });
  });
}
