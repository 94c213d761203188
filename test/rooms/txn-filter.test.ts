// Transaction ids dropped from memory: the filter never forgets one (an old id is still looked up
// and finds its event), a new id needs no lookup however many a device sent, and memory stays
// within its bound (the least recently used devices are forgotten and read again).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TxnFilter } from '../../src/rooms/txn-filter.js';
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
  for (let i = 0; i < 100_000; i++) filter.add(`m${i}.${i * 7}`);
  filter.add('m0.0');
  // Distinct fingerprints: two of 100,000 ids share one about once.
  assert.ok(filter.size > 99_990 && filter.size <= 100_000);
  for (let i = 0; i < 100_000; i += 97) assert.equal(filter.mightHave(`m${i}.${i * 7}`), true);
  let falsePositives = 0;
  for (let i = 0; i < 100_000; i++) if (filter.mightHave(`other-${i}`)) falsePositives++;
  // About 100,000 / 2^32 each.
  assert.ok(falsePositives < 20, `${falsePositives} of 100,000 unknown ids seemed known`);
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

    test('however many ids a device sent, a new one needs no lookup', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { maxIds: 100 });
      const key = { roomNid: txns.roomNid, sender: '@b:hs', deviceId: 'B' };
      await ids.find(key, 'first');
      const early = await send(ids, '@b:hs', 'B', 'early');
      for (let i = 0; i < 50_000; i++) ids.record(key, `r${i}`, Promise.resolve(`$r${i}`));
      txns.lookups = 0;
      for (let i = 0; i < 1000; i++) assert.equal(await ids.find(key, `brand-new${i}`), undefined);
      assert.equal(txns.lookups, 0);
      assert.equal(await (await ids.find(key, 'early')), early);
      assert.equal(txns.lookups, 1, 'an old id is looked up');
    });

    test('read again (after a restart), a device is answered from memory, its older ids as fingerprints', async () => {
      const stored: string[] = [];
      for (let i = 0; i < 30; i++) stored.push(await txns.store('@g:hs', 'G', `g${i}`));
      const ids = new TxnIds(txns.database.db, txns.queries, { loadLimit: 100, maxIds: 10 });
      const key = { roomNid: txns.roomNid, sender: '@g:hs', deviceId: 'G' };
      txns.lookups = 0;
      assert.equal(await ids.find(key, 'new'), undefined);
      assert.equal(await (await ids.find(key, 'g29')), stored[29], 'the newest are in memory');
      assert.equal(txns.lookups, 0);
      for (let i = 0; i < 30; i++) assert.equal(await (await ids.find(key, `g${i}`)), stored[i]);
      assert.ok(txns.lookups >= 20 && txns.lookups <= 25, `${txns.lookups} lookups for the 30 stored ids`);
    });

    test('past the bound of fingerprints, the least recently used devices are forgotten and read again', async () => {
      const ids = new TxnIds(txns.database.db, txns.queries, { maxIds: 10, maxFingerprints: 100 });
      const h = { roomNid: txns.roomNid, sender: '@h:hs', deviceId: 'H' };
      const i = { roomNid: txns.roomNid, sender: '@i:hs', deviceId: 'I' };
      await ids.find(h, 'first');
      const hOld = await send(ids, '@h:hs', 'H', 'h-old');
      for (let n = 0; n < 80; n++) await send(ids, '@h:hs', 'H', `h${n}`);
      await ids.find(i, 'first');
      for (let n = 0; n < 80; n++) await send(ids, '@i:hs', 'I', `i${n}`);
      assert.equal(ids.peek(h, 'h79'), undefined, 'H was forgotten');
      // Read again: H's stored ids (81, of which 5 in memory) fit the bound; I is forgotten for them.
      assert.equal(await (await ids.find(h, 'h-old')), hOld);
      txns.lookups = 0;
      assert.equal(await ids.find(h, 'h-new'), undefined);
      assert.equal(txns.lookups, 0);
      // One device alone past the bound is looked up per send.
      for (let n = 80; n < 300; n++) await send(ids, '@h:hs', 'H', `h${n}`);
      txns.lookups = 0;
      assert.equal(await ids.find(h, 'h-newer'), undefined);
      assert.equal(txns.lookups, 1);
      assert.equal(await (await ids.find(h, 'h-old')), hOld);
    });
  });
}
