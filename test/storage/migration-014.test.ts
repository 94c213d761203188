// Upgrading a database written before migration 014 (the queue of EDUs for other servers and the
// to-device message ids received from them), on SQLite and PostgreSQL: to-device messages queued
// before survive; EDUs are queued, read in order and removed; a received message id is claimed
// once, and pruned by age.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { deleteOutboundEdus, destinationsWithEdus, insertOutboundEdus, selectOutboundEdus } from '../../src/storage/federation/outbound-edus.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { claimInboundToDevice, insertToDeviceMessages, pruneInboundToDevice, selectToDevice } from '../../src/storage/user-data/to-device.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '013-joined-since';

for (const backend of await storageBackends()) {
  describe(`migration 014 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await insertToDeviceMessages(database.db, [{ userId: '@a:hs', deviceId: 'D', sender: '@b:hs', type: 'm.test', content: { old: true } }], 7);
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('to-device messages queued before survive', async () => {
      assert.ok(applied.includes('014-edu-queues'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      const rows = await selectToDevice(database.db, '@a:hs', 'D', 0, 10, 10);
      assert.deepEqual(rows, [{ position: 7, sender: '@b:hs', type: 'm.test', content: { old: true } }]);
    });

    test('EDUs are queued per destination, read oldest first and removed up to an id', async () => {
      await insertOutboundEdus(database.db, ['one.test', 'two.test'], 'm.direct_to_device', { n: 1 }, 100);
      await insertOutboundEdus(database.db, ['one.test'], 'm.device_list_update', { n: 2 }, 101);
      assert.deepEqual((await destinationsWithEdus(database.db)).sort(), ['one.test', 'two.test']);
      const one = await selectOutboundEdus(database.db, 'one.test', 10);
      assert.deepEqual(one.map((e) => [e.eduType, JSON.parse(e.content)]), [
        ['m.direct_to_device', { n: 1 }],
        ['m.device_list_update', { n: 2 }],
      ]);
      assert.ok(one[0]!.id < one[1]!.id);
      await deleteOutboundEdus(database.db, 'one.test', one[0]!.id);
      assert.deepEqual((await selectOutboundEdus(database.db, 'one.test', 10)).map((e) => e.id), [one[1]!.id]);
      assert.equal((await selectOutboundEdus(database.db, 'two.test', 10)).length, 1);
      // Ids are not given out again once the rows are gone (transaction ids are made from them).
      await deleteOutboundEdus(database.db, 'one.test', one[1]!.id);
      await insertOutboundEdus(database.db, ['one.test'], 'm.direct_to_device', { n: 3 }, 102);
      const [again] = await selectOutboundEdus(database.db, 'one.test', 10);
      assert.ok(again!.id > one[1]!.id);
    });

    test('a received message id is claimed once per origin and sender, and pruned by age', async () => {
      assert.equal(await claimInboundToDevice(database.db, 'o.test', '@s:o.test', 'm1', 1_000), true);
      assert.equal(await claimInboundToDevice(database.db, 'o.test', '@s:o.test', 'm1', 2_000), false);
      assert.equal(await claimInboundToDevice(database.db, 'o.test', '@t:o.test', 'm1', 2_000), true);
      await pruneInboundToDevice(database.db, 1_500);
      assert.equal(await claimInboundToDevice(database.db, 'o.test', '@s:o.test', 'm1', 3_000), true);
      assert.equal(await claimInboundToDevice(database.db, 'o.test', '@t:o.test', 'm1', 3_000), false);
    });
  });
}
