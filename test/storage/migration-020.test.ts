// Upgrading a database written before migration 020 (the admin API's account attributes), on
// SQLite and PostgreSQL: accounts and profiles survive; third-party and external identifiers,
// account types and rate-limit overrides are then stored and read back.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { findUser, insertUser } from '../../src/storage/accounts/users.js';
import {
  deleteRatelimitOverride,
  deleteUserIdentifiers,
  listUsersPage,
  replaceExternalIds,
  replaceThreepids,
  selectExternalIds,
  selectRatelimitOverrides,
  selectThreepids,
  selectUserType,
  setUserType,
  upsertRatelimitOverride,
} from '../../src/storage/accounts/admin-users.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '018-media';

for (const backend of await storageBackends()) {
  describe(`migration 020 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await insertUser(database.db, { userId: '@old:hs', localpart: 'old', passwordHash: 'h', isAdmin: true, isGuest: false, createdTs: 1000 });
      await database.db.insertInto('profiles').values({ user_id: '@old:hs', displayname: 'Old Timer', avatar_url: null, search_key: 'old old timer' }).execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('what was stored before survives, and lists with no attributes yet', async () => {
      assert.ok(applied.includes('020-admin-users'), applied.join(', '));
      assert.equal((await findUser(database.db, '@old:hs'))?.is_admin, 1);
      const page = await listUsersPage(database.db, { guests: true, deactivated: true, admins: undefined, userId: undefined, name: 'timer' }, 'name', false, 0, 10);
      assert.equal(page.total, 1);
      assert.deepEqual(
        { ...page.rows[0] },
        { user_id: '@old:hs', is_admin: 1, is_guest: 0, deactivated: 0, created_ts: 1000, appservice_id: null, displayname: 'Old Timer', avatar_url: null, user_type: null },
      );
      assert.deepEqual(await selectThreepids(database.db, '@old:hs'), []);
      assert.deepEqual(await selectRatelimitOverrides(database.db), []);
    });

    test('identifiers, account types and rate-limit overrides are stored and read back', async () => {
      await replaceThreepids(database.db, '@old:hs', [{ medium: 'email', address: 'old@example.org' }], 5000);
      await replaceThreepids(database.db, '@old:hs', [{ medium: 'email', address: 'old@example.org' }, { medium: 'msisdn', address: '123' }], 6000);
      assert.deepEqual(await selectThreepids(database.db, '@old:hs'), [
        { medium: 'email', address: 'old@example.org', validated_at: 5000, added_at: 5000 },
        { medium: 'msisdn', address: '123', validated_at: 6000, added_at: 6000 },
      ]);
      await replaceExternalIds(database.db, '@old:hs', [{ auth_provider: 'oidc', external_id: 'x' }]);
      assert.deepEqual(await selectExternalIds(database.db, '@old:hs'), [{ auth_provider: 'oidc', external_id: 'x' }]);
      await setUserType(database.db, '@old:hs', 'bot');
      await setUserType(database.db, '@old:hs', 'support');
      assert.equal(await selectUserType(database.db, '@old:hs'), 'support');
      await upsertRatelimitOverride(database.db, { user_id: '@old:hs', messages_per_second: 0.5, burst_count: 3 });
      await upsertRatelimitOverride(database.db, { user_id: '@old:hs', messages_per_second: 2, burst_count: 4 });
      assert.deepEqual(await selectRatelimitOverrides(database.db), [{ user_id: '@old:hs', messages_per_second: 2, burst_count: 4 }]);
      await deleteRatelimitOverride(database.db, '@old:hs');
      await deleteUserIdentifiers(database.db, '@old:hs');
      assert.deepEqual(await selectRatelimitOverrides(database.db), []);
      assert.deepEqual(await selectThreepids(database.db, '@old:hs'), []);
      assert.deepEqual(await selectExternalIds(database.db, '@old:hs'), []);
    });
  });
}
