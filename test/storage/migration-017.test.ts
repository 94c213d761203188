// Upgrading a database written before migration 017 (application services' ephemeral positions),
// on SQLite and PostgreSQL: a service's delivery state and its pending transaction survive; the
// ephemeral positions start unset, are recorded with a transaction and kept by one of events only.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { markDelivered, queueState, savePending } from '../../src/storage/appservice/queues.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '016-appservice-queues';

for (const backend of await storageBackends()) {
  describe(`migration 017 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      // Written with the schema of 016: a delivered transaction, then one pending.
      await database.db.insertInto('appservice_queues' as never).values({ as_id: 'irc', last_txn_id: 7, delivered_position: 40, pending_txn_id: 7, pending_body: '{"events":[1]}', pending_position: 52 } as never).execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('what was stored before survives', async () => {
      assert.ok(applied.includes('017-appservice-ephemeral-directory'), applied.join(', '));
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 7, deliveredPosition: 40, pending: { txnId: 7, body: '{"events":[1]}', position: 52 } });
    });

    test('ephemeral positions: recorded with a transaction, kept by one of events only', async () => {
      await markDelivered(database.db, 'irc', 52);
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 7, deliveredPosition: 52 });
      const positions = { receipts: 3, presence: 4, to_device: 5 };
      await savePending(database.db, 'irc', 8, '{"events":[],"ephemeral":[]}', 52, positions);
      assert.deepEqual(await queueState(database.db, 'irc'), {
        lastTxnId: 8,
        deliveredPosition: 52,
        pending: { txnId: 8, body: '{"events":[],"ephemeral":[]}', position: 52, ephemeral: positions },
      });
      await markDelivered(database.db, 'irc', 52, positions);
      await savePending(database.db, 'irc', 9, '{"events":[2]}', 60);
      await markDelivered(database.db, 'irc', 60);
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 9, deliveredPosition: 60, ephemeral: positions });
    });
  });
}
