// Upgrading a database written before migration 011 (server keys), on SQLite and PostgreSQL: the
// rows written then survive, and the key queries work on the upgraded database (a key is
// replaced only by one valid until at least as late).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { upsertServerKeys, selectServerKeys, type StoredServerKey } from '../../src/storage/federation/server-keys.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { allocateStreamPosition, currentStreamPositions } from '../../src/storage/streams.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '010-stream-consumers';

function key(keyId: string, validUntilTs: number, extra: Partial<StoredServerKey> = {}): StoredServerKey {
  return {
    serverName: 'remote.test',
    keyId,
    publicKey: `pk-${keyId}-${validUntilTs}`,
    validUntilTs,
    expiredTs: null,
    fetchedAt: 1_000,
    keyJson: JSON.stringify({ server_name: 'remote.test', valid_until_ts: validUntilTs }),
    ...extra,
  };
}

for (const backend of await storageBackends()) {
  describe(`migration 011 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      // Rows as the schema before 011 holds them: stream positions and a consumer's position.
      const db = database.db;
      await allocateStreamPosition(db, 'events');
      await allocateStreamPosition(db, 'events');
      await db.insertInto('stream_consumers').values({ name: 'pusher', stream: 'events', position: 2, updated_ts: 5 }).execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the rows written before survive; server_keys starts empty', async () => {
      assert.ok(applied.includes('011-server-keys'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      assert.equal((await currentStreamPositions(database.db)).events, 2);
      const consumer = await database.db.selectFrom('stream_consumers').selectAll().executeTakeFirstOrThrow();
      assert.deepEqual([consumer.name, Number(consumer.position)], ['pusher', 2]);
      assert.deepEqual(await selectServerKeys(database.db, ['remote.test']), []);
    });

    test('keys are stored and read back; the later valid_until_ts wins', async () => {
      const db = database.db;
      const old = key('ed25519:old', 50_000, { expiredTs: 40_000 });
      await upsertServerKeys(db, [key('ed25519:a', 100_000), old, key('ed25519:b', 1_000, { serverName: 'other.test' })]);
      // An older answer for ed25519:a does not undo the newer one; a newer one replaces it.
      await upsertServerKeys(db, [key('ed25519:a', 90_000, { fetchedAt: 2_000 })]);
      let rows = await selectServerKeys(db, ['remote.test']);
      assert.deepEqual(
        rows.sort((x, y) => x.keyId.localeCompare(y.keyId)),
        [key('ed25519:a', 100_000), old],
      );
      const newer = key('ed25519:a', 200_000, { fetchedAt: 3_000, expiredTs: 150_000 });
      await upsertServerKeys(db, [newer]);
      rows = await selectServerKeys(db, ['remote.test', 'other.test', 'absent.test']);
      assert.equal(rows.length, 3);
      assert.deepEqual(rows.find((r) => r.keyId === 'ed25519:a'), newer);
      assert.equal(rows.find((r) => r.keyId === 'ed25519:b')?.serverName, 'other.test');
      // Timestamps past 2^32 survive as numbers on both backends.
      const late = key('ed25519:late', 4_102_444_800_000);
      await upsertServerKeys(db, [late]);
      assert.deepEqual((await selectServerKeys(db, ['remote.test'])).find((r) => r.keyId === 'ed25519:late'), late);
    });
  });
}
