// Upgrading a database written before migration 016 (application services' delivery state), on
// SQLite and PostgreSQL: a device list kept before survives; a service's state starts empty, takes
// a pending transaction, and marks it delivered, keeping its last transaction id.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { markDelivered, queueState, savePending } from '../../src/storage/appservice/queues.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { replaceKeptDeviceList, selectKeptDeviceList } from '../../src/storage/user-data/remote-device-lists.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '015-remote-device-lists';
const BOB = '@bob:remote.test';

for (const backend of await storageBackends()) {
  describe(`migration 016 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await database.db.transaction().execute((trx) => replaceKeptDeviceList(trx, BOB, { streamId: 10, devices: [{ deviceId: 'A', keys: null, displayName: 'phone' }] }, 5, 1_000));
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('what was stored before survives', async () => {
      assert.ok(applied.includes('016-appservice-queues'), applied.join(', '));
      assert.equal((await selectKeptDeviceList(database.db, BOB))?.streamId, 10);
    });

    test("a service's state: empty, then a pending transaction, then delivered", async () => {
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 0, deliveredPosition: 0 });
      await savePending(database.db, 'irc', 1, '{"events":[]}', 40);
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 1, deliveredPosition: 0, pending: { txnId: 1, body: '{"events":[]}', position: 40 } });
      await markDelivered(database.db, 'irc', 40);
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 1, deliveredPosition: 40 });
      await savePending(database.db, 'irc', 2, '{"events":[1]}', 55);
      await markDelivered(database.db, 'irc', 55);
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 2, deliveredPosition: 55 });
      // Services are apart.
      assert.deepEqual(await queueState(database.db, 'other'), { lastTxnId: 0, deliveredPosition: 0 });
    });
  });
}
