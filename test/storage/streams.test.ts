import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { allocateStreamPosition, currentStreamPositions } from '../../src/storage/streams.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

for (const backend of await storageBackends()) {
  describe(`stream positions on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
      await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('start at 1, count up per stream, survive in the table', async () => {
      assert.deepEqual(await currentStreamPositions(database.db), {
        events: 0, receipts: 0, presence: 0, account_data: 0, to_device: 0, device_lists: 0,
      });
      assert.equal(await allocateStreamPosition(database.db, 'events'), 1);
      assert.equal(await allocateStreamPosition(database.db, 'events'), 2);
      assert.equal(await allocateStreamPosition(database.db, 'receipts'), 1);
      const now = await currentStreamPositions(database.db);
      assert.equal(now.events, 2);
      assert.equal(now.receipts, 1);
    });

    test('concurrent transactions get distinct positions; a rolled-back one leaves no trace', async () => {
      const got = await Promise.all(
        Array.from({ length: 20 }, () =>
          database.db.transaction().execute((trx) => allocateStreamPosition(trx, 'to_device')),
        ),
      );
      assert.deepEqual([...got].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
      await assert.rejects(
        database.db.transaction().execute(async (trx) => {
          await allocateStreamPosition(trx, 'to_device');
          throw new Error('abort');
        }),
      );
      assert.equal(await allocateStreamPosition(database.db, 'to_device'), 21);
    });
  });
}
