import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { sql } from 'kysely';
import { dialectOf, openDatabase, sqlitePath, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest, migrations } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

test('connection strings choose the backend', () => {
  assert.equal(dialectOf('postgres://u@h/db'), 'postgres');
  assert.equal(dialectOf('postgresql://h/db'), 'postgres');
  assert.equal(dialectOf('file:data/hearth.db'), 'sqlite');
  assert.equal(dialectOf('data/hearth.db'), 'sqlite');
  assert.equal(sqlitePath('file:data/hearth.db?_busy_timeout=5000'), 'data/hearth.db');
  assert.equal(sqlitePath('file:///abs/hearth.db'), '/abs/hearth.db');
  assert.throws(() => sqlitePath('file:'));
});

for (const backend of await storageBackends()) {
  describe(`storage on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('migrateTo stops at the named migration; the rest apply later', async () => {
      const scratch = await backend.create();
      const other = openDatabase<Schema>({ connectionString: scratch.connectionString, maxOpenConns: 2 });
      try {
        const names = migrations.map((m) => m.name);
        assert.deepEqual(await migrateTo(other.db as never, other.dialect, names[1]), names.slice(0, 2));
        assert.deepEqual(await migrateToLatest(other.db as never, other.dialect), names.slice(2));
        await assert.rejects(migrateTo(other.db as never, other.dialect, '999-none'), /no migration named/);
      } finally {
        await other.close();
        await scratch.drop();
      }
    });

    test('migrations apply once, in order, and again as a no-op', async () => {
      const applied = await migrateToLatest(database.db as never, database.dialect);
      assert.deepEqual(applied, migrations.map((m) => m.name));
      assert.deepEqual(await migrateToLatest(database.db as never, database.dialect), []);
    });

    test('rows round-trip with integers as numbers; constraints hold', async () => {
      const db = database.db;
      const big = 2 ** 40 + 7;
      await db.insertInto('users').values({ user_id: '@a:hs', localpart: 'a', password_hash: null, is_admin: 1, is_guest: 0, deactivated: 0, appservice_id: null, created_ts: big }).execute();
      await db.insertInto('devices').values({ user_id: '@a:hs', device_id: 'D1', display_name: 'phone', created_ts: big, last_seen_ts: null, last_seen_ip: null }).execute();
      const t1 = await db.insertInto('access_tokens').values({ token_hash: 'h1', user_id: '@a:hs', device_id: 'D1', created_ts: 1, valid_until_ts: null }).returning('token_id').executeTakeFirstOrThrow();
      const t2 = await db.insertInto('access_tokens').values({ token_hash: 'h2', user_id: '@a:hs', device_id: 'D1', created_ts: 2, valid_until_ts: null }).returning('token_id').executeTakeFirstOrThrow();
      assert.equal(typeof t1.token_id, 'number');
      assert.ok(t2.token_id > t1.token_id);
      const user = await db.selectFrom('users').selectAll().where('user_id', '=', '@a:hs').executeTakeFirstOrThrow();
      assert.equal(user.created_ts, big);
      assert.equal(user.is_admin, 1);
      // Duplicate token hash and unknown user are refused.
      await assert.rejects(db.insertInto('access_tokens').values({ token_hash: 'h1', user_id: '@a:hs', device_id: 'D1', created_ts: 3, valid_until_ts: null }).execute());
      await assert.rejects(db.insertInto('devices').values({ user_id: '@nobody:hs', device_id: 'D', display_name: null, created_ts: 1, last_seen_ts: null, last_seen_ip: null }).execute());
      // Deleting the user removes its devices and tokens.
      await db.deleteFrom('users').where('user_id', '=', '@a:hs').execute();
      const left = await db.selectFrom('access_tokens').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(left.n), 0);
    });

    if (backend.name === 'sqlite') {
      test('SQLite runs in WAL mode on a real file', async () => {
        const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(database.db);
        assert.equal(mode.rows[0]?.journal_mode, 'wal');
        assert.ok(existsSync(sqlitePath(target.connectionString)));
      });
    }
  });
}
