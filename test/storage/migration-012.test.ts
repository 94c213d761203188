// Upgrading a database written before migration 012 (inbound federation transactions), on SQLite
// and PostgreSQL: the server keys stored before survive, and answers to transactions are kept,
// found again and pruned by age on the upgraded database.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { findInboundTransaction, pruneInboundTransactions, recordInboundTransaction } from '../../src/storage/federation/inbound-transactions.js';
import { selectServerKeys, upsertServerKeys } from '../../src/storage/federation/server-keys.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '011-server-keys';
const KEY = {
  serverName: 'remote.test',
  keyId: 'ed25519:a',
  publicKey: 'pk',
  validUntilTs: 4_102_444_800_000,
  expiredTs: null,
  fetchedAt: 1_000,
  keyJson: '{"server_name":"remote.test"}',
};

for (const backend of await storageBackends()) {
  describe(`migration 012 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await upsertServerKeys(database.db, [KEY]);
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the keys stored before survive', async () => {
      assert.ok(applied.includes('012-inbound-transactions'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      assert.deepEqual(await selectServerKeys(database.db, ['remote.test']), [KEY]);
    });

    test('answers are kept per origin and id, the first one stays, and old ones are pruned', async () => {
      const db = database.db;
      await recordInboundTransaction(db, 'a.test', 't1', '{"pdus":{}}', 1_000);
      await recordInboundTransaction(db, 'b.test', 't1', '{"pdus":{"$x":{}}}', 5_000);
      // A second answer for the same transaction does not replace the first.
      await recordInboundTransaction(db, 'a.test', 't1', '{"pdus":{"$y":{}}}', 6_000);
      assert.equal(await findInboundTransaction(db, 'a.test', 't1'), '{"pdus":{}}');
      assert.equal(await findInboundTransaction(db, 'b.test', 't1'), '{"pdus":{"$x":{}}}');
      assert.equal(await findInboundTransaction(db, 'a.test', 't2'), undefined);
      assert.equal(await pruneInboundTransactions(db, 2_000), 1);
      assert.equal(await findInboundTransaction(db, 'a.test', 't1'), undefined);
      assert.equal(await findInboundTransaction(db, 'b.test', 't1'), '{"pdus":{"$x":{}}}');
    });
  });
}
