// Upgrading a database written before migration 008 (erased users): its accounts and profiles
// survive, and erasing works on it: the mark is stored once, read back at start, and an erasing
// deactivation empties the profile. SQLite and PostgreSQL.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { ErasedUsers } from '../../src/rooms/erased-users.js';
import { erasedUserIds, markUserErased } from '../../src/storage/accounts/erased-users.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { AccountService } from '../../src/users/accounts.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const users = ['@alice:hs.test', '@bob:hs.test', '@carol:hs.test'];

for (const backend of await storageBackends()) {
  describe(`migration 008 (erased users) over an older database on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let db: Kysely<Schema>;

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      db = database.db;
      await migrateTo(db as never, database.dialect, '005-device-lists');
      for (const [i, userId] of users.entries()) {
        const localpart = userId.slice(1, userId.indexOf(':'));
        await db
          .insertInto('users')
          .values({ user_id: userId, localpart, password_hash: 'x', is_admin: 0, is_guest: 0, deactivated: 0, appservice_id: null, created_ts: 1000 + i })
          .execute();
        await db
          .insertInto('profiles')
          .values({ user_id: userId, displayname: `${localpart} name`, avatar_url: `mxc://hs.test/${localpart}`, search_key: `${localpart} ${localpart} name` })
          .execute();
      }
      const applied = await migrateToLatest(db as never, database.dialect);
      assert.ok(applied.includes('008-erased-users'), applied.join(', '));
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('accounts and profiles written before survive the upgrade; nobody is erased', async () => {
      const rows = await db.selectFrom('users').select(['user_id', 'created_ts', 'deactivated']).orderBy('user_id').execute();
      assert.deepEqual(
        rows.map((r) => [r.user_id, Number(r.created_ts), r.deactivated]),
        users.map((u, i) => [u, 1000 + i, 0]),
      );
      const profiles = await db.selectFrom('profiles').select(['user_id', 'displayname', 'avatar_url']).orderBy('user_id').execute();
      assert.deepEqual(profiles.map((p) => p.displayname), ['alice name', 'bob name', 'carol name']);
      assert.deepEqual(await erasedUserIds(db), []);
      assert.equal((await ErasedUsers.load(db)).size, 0);
    });

    test('a mark is stored once, keeps its first time, and is read back at start', async () => {
      await markUserErased(db, users[0]!, 5000);
      await markUserErased(db, users[0]!, 9000);
      const rows = await db.selectFrom('erased_users').selectAll().execute();
      assert.deepEqual(rows.map((r) => [r.user_id, Number(r.erased_ts)]), [[users[0], 5000]]);
      const loaded = await ErasedUsers.load(db);
      assert.equal(loaded.has(users[0]!), true);
      assert.equal(loaded.has(users[1]!), false);
    });

    test('an erasing deactivation marks the user and empties their profile; a plain one does neither', async () => {
      const accounts = new AccountService({ db, serverName: 'hs.test', bcryptCost: 4, registrationDisabled: true, guestsDisabled: true, registrationSharedSecret: null, now: () => 7000 });
      await accounts.deactivateUser(users[1]!, { erase: true });
      await accounts.deactivateUser(users[2]!, { erase: false });
      assert.deepEqual((await erasedUserIds(db)).sort(), [users[0], users[1]].sort());
      const profiles = new Map((await db.selectFrom('profiles').selectAll().execute()).map((p) => [p.user_id, p]));
      assert.equal(profiles.get(users[1]!)!.displayname, null);
      assert.equal(profiles.get(users[1]!)!.avatar_url, null);
      assert.equal(profiles.get(users[2]!)!.displayname, 'carol name');
      assert.equal(profiles.get(users[2]!)!.avatar_url, 'mxc://hs.test/carol');
      const deactivated = await db.selectFrom('users').select(['user_id', 'deactivated']).where('deactivated', '=', 1).orderBy('user_id').execute();
      assert.deepEqual(deactivated.map((r) => r.user_id), [users[1], users[2]]);
    });
  });
}
