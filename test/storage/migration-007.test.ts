// Upgrading a database written before migration 007 (pushers, OpenID tokens, devices' user agents),
// on SQLite and PostgreSQL: the accounts, devices and tokens written then survive, and the new
// columns and tables work on them.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { deleteDevices, listDevices, touchDevice } from '../../src/storage/accounts/devices.js';
import { listPushers, upsertPusher } from '../../src/storage/accounts/pushers.js';
import { insertOpenIdToken, openIdTokenOwner } from '../../src/storage/accounts/openid-tokens.js';
import { findTokenOwner } from '../../src/storage/accounts/access-tokens.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '005-device-lists';
const ALICE = '@alice:hs';

for (const backend of await storageBackends()) {
  describe(`migration 007 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      // Rows as the schema before 007 holds them: no user-agent column yet.
      const db = database.db;
      await db.insertInto('users').values({ user_id: ALICE, localpart: 'alice', password_hash: 'hash', is_admin: 0, is_guest: 0, deactivated: 0, appservice_id: null, created_ts: 1 }).execute();
      for (const [deviceId, seen] of [
        ['PHONE', 1000],
        ['LAPTOP', null],
      ] as const) {
        await db.insertInto('devices').values({ user_id: ALICE, device_id: deviceId, display_name: deviceId.toLowerCase(), created_ts: 1, last_seen_ts: seen, last_seen_ip: seen === null ? null : '10.0.0.1' }).execute();
        await db.insertInto('access_tokens').values({ token_hash: `hash-${deviceId}`, user_id: ALICE, device_id: deviceId, created_ts: 1, valid_until_ts: null }).execute();
      }
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the rows written before survive, the new column reads null', async () => {
      assert.ok(applied.includes('007-pushers-openid'), applied.join(', '));
      const devices = await listDevices(database.db, ALICE);
      assert.deepEqual(
        devices.map((d) => [d.device_id, d.display_name, d.last_seen_ts, d.last_seen_ip, d.last_seen_user_agent]),
        [
          ['LAPTOP', 'laptop', null, null, null],
          ['PHONE', 'phone', 1000, '10.0.0.1', null],
        ],
      );
      const owner = await findTokenOwner(database.db, 'hash-PHONE');
      assert.deepEqual([owner?.userId, owner?.deviceId], [ALICE, 'PHONE']);
    });

    test('devices record their user agent; pushers go with their device; OpenID tokens resolve', async () => {
      const db = database.db;
      await touchDevice(db, ALICE, 'LAPTOP', 2000, '10.0.0.2', 'Client/2');
      const laptop = (await listDevices(db, ALICE)).find((d) => d.device_id === 'LAPTOP')!;
      assert.deepEqual([laptop.last_seen_ts, laptop.last_seen_ip, laptop.last_seen_user_agent], [2000, '10.0.0.2', 'Client/2']);

      const base = { user_id: ALICE, app_id: 'app', kind: 'http', app_display_name: 'App', device_display_name: 'Dev', profile_tag: '', lang: 'en', data_json: '{"url":"https://gw/_matrix/push/v1/notify"}', created_ts: 3 };
      await upsertPusher(db, { ...base, pushkey: 'p1', device_id: 'PHONE' });
      await upsertPusher(db, { ...base, pushkey: 'p2', device_id: 'LAPTOP' });
      await upsertPusher(db, { ...base, pushkey: 'p1', device_id: 'PHONE', lang: 'de' });
      assert.deepEqual((await listPushers(db, ALICE)).map((p) => [p.pushkey, p.lang]), [
        ['p1', 'de'],
        ['p2', 'en'],
      ]);
      assert.deepEqual(await db.transaction().execute((trx) => deleteDevices(trx, ALICE, ['PHONE'])), ['PHONE']);
      assert.deepEqual((await listPushers(db, ALICE)).map((p) => p.pushkey), ['p2']);

      await insertOpenIdToken(db, 'openid-hash', ALICE, 5000);
      assert.equal(await openIdTokenOwner(db, 'openid-hash', 4999), ALICE);
      assert.equal(await openIdTokenOwner(db, 'openid-hash', 5000), undefined);
      await assert.rejects(insertOpenIdToken(db, 'openid-hash', ALICE, 6000));
    });
  });
}
