// Upgrading a database written at migration 005 to the latest schema, on SQLite and PostgreSQL:
// the device_lists stream and the device keys survive, changes written before read as changes for
// everyone, and the cross-signing and key backup tables work.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest, migrations } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { allocateStreamPosition } from '../../src/storage/streams.js';
import { selectCrossSigningKeys, selectVisibleSignatures, upsertCrossSigningKey, upsertSignatures } from '../../src/storage/user-data/cross-signing.js';
import { selectDeviceKeys } from '../../src/storage/user-data/device-keys.js';
import { deviceListChangesSeenBy, insertPrivateDeviceListChanges, usersWithDeviceListChanges } from '../../src/storage/user-data/device-lists.js';
import { countBackupKeys, insertBackupVersion, selectBackupKeys, upsertBackupKeys } from '../../src/storage/user-data/key-backup.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const ALICE = '@alice:hs.test';
const BOB = '@bob:hs.test';

for (const backend of await storageBackends()) {
  describe(`upgrade from 005 to the latest schema on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let db: Kysely<Schema>;
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      db = database.db;
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('rows written at 005 survive; the new tables and column work', async () => {
      await migrateTo(db as Kysely<unknown>, database.dialect, '005-device-lists');
      // Rows as the 005 schema has them (no only_for column yet).
      const old = db as unknown as Kysely<any>;
      const p1 = await allocateStreamPosition(db, 'device_lists');
      const p2 = await allocateStreamPosition(db, 'device_lists');
      await old.insertInto('device_list_changes').values([{ stream_position: p1, user_id: ALICE }, { stream_position: p2, user_id: BOB }]).execute();
      await old.insertInto('device_keys').values({ user_id: ALICE, device_id: 'A1', key_json: JSON.stringify({ device_id: 'A1', keys: {} }) }).execute();
      await old.insertInto('one_time_keys').values({ user_id: ALICE, device_id: 'A1', algorithm: 'signed_curve25519', key_id: 'K', key_json: '"k"' }).execute();

      const applied = await migrateToLatest(db as Kysely<unknown>, database.dialect);
      const names = migrations.map((m) => m.name);
      assert.deepEqual(applied, names.slice(names.indexOf('005-device-lists') + 1));
      assert.ok(applied.includes('006-cross-signing-backup'));

      // Old changes are changes for everyone sharing a room.
      assert.deepEqual([...(await usersWithDeviceListChanges(db, 0, p2))].sort(), [ALICE, BOB]);
      assert.deepEqual(await deviceListChangesSeenBy(db, BOB, 0, p2), { shared: new Set([ALICE, BOB]), direct: new Set() });
      assert.deepEqual(await selectDeviceKeys(db, ALICE, 'A1'), { device_id: 'A1', keys: {} });
      const otks = await db.selectFrom('one_time_keys').select(['key_id', 'key_json']).execute();
      assert.deepEqual(otks, [{ key_id: 'K', key_json: '"k"' }]);

      // A change for one user only.
      const p3 = await db.transaction().execute((trx) => insertPrivateDeviceListChanges(trx, [BOB, BOB], ALICE));
      assert.equal(p3, p2 + 1);
      assert.deepEqual(await deviceListChangesSeenBy(db, ALICE, p2, p3), { shared: new Set(), direct: new Set([BOB]) });
      assert.deepEqual(await deviceListChangesSeenBy(db, BOB, p2, p3), { shared: new Set(), direct: new Set() });
      assert.deepEqual([...(await usersWithDeviceListChanges(db, p2, p3))], []);

      // Cross-signing keys and signatures.
      await upsertCrossSigningKey(db, ALICE, 'master', { publicKey: 'mpk', key: { user_id: ALICE, usage: ['master'] } });
      await upsertCrossSigningKey(db, ALICE, 'master', { publicKey: 'mpk2', key: { user_id: ALICE, usage: ['master'], v: 2 } });
      await upsertCrossSigningKey(db, BOB, 'master', { publicKey: 'bpk', key: { user_id: BOB } });
      const keys = await selectCrossSigningKeys(db, [ALICE, BOB]);
      assert.deepEqual(keys.get(ALICE)?.get('master'), { publicKey: 'mpk2', key: { user_id: ALICE, usage: ['master'], v: 2 } });
      assert.equal(keys.get(BOB)?.get('master')?.publicKey, 'bpk');
      const own = { signerUserId: ALICE, signingKeyId: 'ed25519:A1', targetUserId: ALICE, targetKeyId: 'mpk2', signature: 's1' };
      const ofBob = { signerUserId: ALICE, signingKeyId: 'ed25519:usk', targetUserId: BOB, targetKeyId: 'bpk', signature: 's2' };
      await upsertSignatures(db, [own, ofBob]);
      await upsertSignatures(db, [{ ...own, signature: 's1b' }]);
      assert.deepEqual(await selectVisibleSignatures(db, [ALICE, BOB], BOB), [{ ...own, signature: 's1b' }]);
      assert.equal((await selectVisibleSignatures(db, [ALICE, BOB], ALICE)).length, 2);

      // Key backup versions and keys.
      const v1 = await insertBackupVersion(db, ALICE, 'alg', { public_key: 'x' });
      const v2 = await insertBackupVersion(db, ALICE, 'alg', { public_key: 'y' });
      assert.deepEqual([v1, v2, await insertBackupVersion(db, BOB, 'alg', {})], [1, 2, 1]);
      const key = { roomId: '!r:hs.test', sessionId: 's', firstMessageIndex: 2 ** 40, forwardedCount: 1, isVerified: true, sessionData: { c: 'd' } };
      await upsertBackupKeys(db, ALICE, v2, [key]);
      await upsertBackupKeys(db, ALICE, v2, [{ ...key, forwardedCount: 0 }]);
      assert.deepEqual(await selectBackupKeys(db, ALICE, v2), [{ ...key, forwardedCount: 0 }]);
      assert.equal(await countBackupKeys(db, ALICE, v2), 1);
      assert.equal(await countBackupKeys(db, ALICE, v1), 0);
    });
  });
}
