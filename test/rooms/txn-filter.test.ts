// Transaction ids dropped from memory: the filter never forgets one (an old id is still looked up
// and finds its event), a new id needs no lookup, and a filter past its capacity gives way to
// lookups for everything not in memory.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TXN_FILTER_CAPACITY, TxnFilter } from '../../src/rooms/txn-filter.js';
import { TxnIds } from '../../src/rooms/txn-ids.js';
import { storageBackends } from '../support/databases.js';
import { useTxnRows } from './txn-rows.js';

test('the filter has every id added and few it was not given', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 300 }), (ids) => {
      const filter = new TxnFilter();
      for (const id of ids) filter.add(id);
      for (const id of ids) assert.equal(filter.mightHave(id), true);
    }),
  );
  const filter = new TxnFilter();
  for (let i = 0; i < TXN_FILTER_CAPACITY; i++) filter.add(`m${i}.${i * 7}`);
  assert.equal(filter.full, true);
  let falsePositives = 0;
  for (let i = 0; i < 10_000; i++) if (filter.mightHave(`other-${i}`)) falsePositives++;
  assert.ok(falsePositives < 400, `${falsePositives} of 10,000 unknown ids seemed known`);
  assert.equal(new TxnFilter().mightHave('m0.0'), false);
});

for (const backend of await storageBackends()) {
  describe(`transaction ids dropped from memory on ${backend.name}`, { skip: backend.skip }, () => {
    const txns = useTxnRows(backend, '!filter:hs');

    /** Stores an event sent with `txn` and records it, as a send does. */
    const send = async (ids: TxnIds, sender: string, device: string, txn: string): Promise<string> => {
      const eventId = await txns.store(sender, device, txn);
      ids.record({ roomNid: txns.roomNid, sender, deviceId: device }, txn, Promise.resolve(eventId));
      return eventId;
    };

    test('past the memory bound, new ids need no lookup and dropped ones are still found', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { maxIds: 4 });
      const key = { roomNid: txns.roomNid, sender: '@a:hs', deviceId: 'A' };
      assert.equal(await ids.find(key, 't0'), undefined); // reads the device's stored ids: none
      const sent: string[] = [];
      for (let i = 0; i < 10; i++) sent.push(await send(ids, '@a:hs', 'A', `t${i}`));
      assert.equal(ids.peek(key, 't0'), undefined, 't0 left memory');
      txns.lookups = 0;
      for (let i = 0; i < 20; i++) assert.equal(await ids.find(key, `new${i}`), undefined);
      assert.ok(txns.lookups <= 1, `${txns.lookups} lookups for 20 new ids`);
      txns.lookups = 0;
      for (let i = 0; i < 10; i++) assert.equal(await (await ids.find(key, `t${i}`)), sent[i]);
      assert.ok(txns.lookups >= 1, 'the dropped ones were looked up');
    });

    test('once the filter is full, every id not in memory is looked up', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { maxIds: 2 * TXN_FILTER_CAPACITY });
      const key = { roomNid: txns.roomNid, sender: '@b:hs', deviceId: 'B' };
      await ids.find(key, 'first');
      const early = await send(ids, '@b:hs', 'B', 'early');
      for (let i = 0; i < 2 * TXN_FILTER_CAPACITY + 10; i++) ids.record(key, `r${i}`, Promise.resolve(`$r${i}`));
      txns.lookups = 0;
      assert.equal(await ids.find(key, 'brand-new'), undefined);
      assert.equal(txns.lookups, 1, 'a full filter means a lookup');
      assert.equal(await (await ids.find(key, 'early')), early);
    });
  });
}
