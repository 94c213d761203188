// Upgrading a database written before migration 015 (the copy of other servers' users' device
// lists), on SQLite and PostgreSQL: EDUs queued and device keys stored before survive; a list is
// replaced whole, moved on by an update only when it follows what the copy holds, marked stale,
// given new cross-signing keys and forgotten.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { insertOutboundEdus, selectOutboundEdus } from '../../src/storage/federation/outbound-edus.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { selectDeviceKeys, upsertDeviceKeys } from '../../src/storage/user-data/device-keys.js';
import {
  advanceKeptDeviceList,
  deleteKeptDevice,
  deleteKeptDeviceList,
  markKeptDeviceListStale,
  replaceKeptDeviceList,
  selectKeptDeviceList,
  selectKeptDevices,
  updateKeptSigningKeys,
  upsertKeptDevice,
} from '../../src/storage/user-data/remote-device-lists.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '014-edu-queues';
const BOB = '@bob:remote.test';

const keysOf = (deviceId: string) => ({ user_id: BOB, device_id: deviceId, algorithms: ['m.olm.v1.curve25519-aes-sha2'], keys: { [`ed25519:${deviceId}`]: deviceId }, signatures: {} });
const master = { user_id: BOB, usage: ['master'], keys: { 'ed25519:M': 'M' } };
const selfSigning = { user_id: BOB, usage: ['self_signing'], keys: { 'ed25519:S': 'S' } };

for (const backend of await storageBackends()) {
  describe(`migration 015 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await insertOutboundEdus(database.db, ['one.test'], 'm.device_list_update', { n: 1 }, 100);
      await upsertDeviceKeys(database.db, '@a:hs', 'D', { user_id: '@a:hs', device_id: 'D' });
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('EDUs queued and device keys stored before survive', async () => {
      assert.ok(applied.includes('015-remote-device-lists'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      const queued = await selectOutboundEdus(database.db, 'one.test', 10);
      assert.deepEqual(queued.map((e) => [e.eduType, JSON.parse(e.content)]), [['m.device_list_update', { n: 1 }]]);
      assert.deepEqual(await selectDeviceKeys(database.db, '@a:hs', 'D'), { user_id: '@a:hs', device_id: 'D' });
    });

    test('a list is replaced whole, read by device, and kept with its cross-signing keys', async () => {
      assert.equal(await selectKeptDeviceList(database.db, BOB), undefined);
      await database.db.transaction().execute((trx) =>
        replaceKeptDeviceList(trx, BOB, { streamId: 10, devices: [{ deviceId: 'A', keys: keysOf('A'), displayName: 'phone' }, { deviceId: 'B', keys: null, displayName: null }], masterKey: master }, 5, 1_000),
      );
      assert.deepEqual(await selectKeptDeviceList(database.db, BOB), { streamId: 10, stale: false, sharedSince: 5, masterKey: master, selfSigningKey: undefined });
      const all = await selectKeptDevices(database.db, BOB, undefined);
      assert.deepEqual(all.sort((a, b) => a.deviceId.localeCompare(b.deviceId)), [
        { deviceId: 'A', keys: keysOf('A'), displayName: 'phone' },
        { deviceId: 'B', keys: null, displayName: null },
      ]);
      assert.deepEqual(await selectKeptDevices(database.db, BOB, ['B', 'Z']), [{ deviceId: 'B', keys: null, displayName: null }]);
      // Replaced again: the old devices go.
      await database.db.transaction().execute((trx) => replaceKeptDeviceList(trx, BOB, { streamId: 12, devices: [{ deviceId: 'C', keys: keysOf('C'), displayName: null }], selfSigningKey: selfSigning }, 7, 2_000));
      assert.deepEqual((await selectKeptDevices(database.db, BOB, undefined)).map((d) => d.deviceId), ['C']);
      assert.deepEqual(await selectKeptDeviceList(database.db, BOB), { streamId: 12, stale: false, sharedSince: 7, masterKey: undefined, selfSigningKey: selfSigning });
    });

    test('an update moves the list on only when it follows what the copy holds, and not while stale', async () => {
      // Follows 12 (or less): applies; the same position again applies too (one change, several devices).
      assert.equal(await advanceKeptDeviceList(database.db, BOB, 15, 12, 3_000), true);
      assert.equal(await advanceKeptDeviceList(database.db, BOB, 15, 11, 3_000), true);
      // Follows 16, which the copy does not hold; older than the copy.
      assert.equal(await advanceKeptDeviceList(database.db, BOB, 20, 16, 3_000), false);
      assert.equal(await advanceKeptDeviceList(database.db, BOB, 14, undefined, 3_000), false);
      assert.equal((await selectKeptDeviceList(database.db, BOB))?.streamId, 15);
      await upsertKeptDevice(database.db, BOB, { deviceId: 'D', keys: keysOf('D'), displayName: 'laptop' });
      await upsertKeptDevice(database.db, BOB, { deviceId: 'C', keys: keysOf('C'), displayName: 'renamed' });
      await deleteKeptDevice(database.db, BOB, 'D');
      assert.deepEqual(await selectKeptDevices(database.db, BOB, undefined), [{ deviceId: 'C', keys: keysOf('C'), displayName: 'renamed' }]);

      assert.equal(await markKeptDeviceListStale(database.db, BOB, 4_000), true);
      assert.equal(await markKeptDeviceListStale(database.db, '@nobody:remote.test', 4_000), false);
      assert.equal((await selectKeptDeviceList(database.db, BOB))?.stale, true);
      assert.equal(await advanceKeptDeviceList(database.db, BOB, 16, 15, 4_000), false);
    });

    test('cross-signing keys are set one at a time, and a list is forgotten with its devices', async () => {
      assert.equal(await updateKeptSigningKeys(database.db, BOB, { masterKey: master }, 5_000), true);
      assert.equal(await updateKeptSigningKeys(database.db, '@nobody:remote.test', { masterKey: master }, 5_000), false);
      const kept = await selectKeptDeviceList(database.db, BOB);
      assert.deepEqual([kept?.masterKey, kept?.selfSigningKey], [master, selfSigning]);
      await database.db.transaction().execute((trx) => deleteKeptDeviceList(trx, BOB));
      assert.equal(await selectKeptDeviceList(database.db, BOB), undefined);
      assert.deepEqual(await selectKeptDevices(database.db, BOB, undefined), []);
    });
  });
}
