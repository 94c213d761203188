// Upgrading a database written before migration 022 (push notifications), on SQLite and
// PostgreSQL: pushers set before it survive and are marked as not started (they are sent what is
// notified after the server's next start); notifications can be stored and read back.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { listPushers } from '../../src/storage/accounts/pushers.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import { insertNotifications, notificationsAfter, notificationsBefore, pruneNotifications, startNewPushers } from '../../src/storage/push/notifications.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '021-admin-rooms';

for (const backend of await storageBackends()) {
  describe(`migration 022 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      // Written with the schema of 021: a pusher.
      await database.db
        .insertInto('pushers' as never)
        .values({
          user_id: '@alice:example.org',
          app_id: 'org.example.app',
          pushkey: 'key-1',
          kind: 'http',
          app_display_name: 'Example',
          device_display_name: 'Phone',
          profile_tag: '',
          lang: 'en',
          data_json: '{"url":"https://push.example.org/_matrix/push/v1/notify"}',
          device_id: 'DEVICE',
          created_ts: 1700000000000,
        } as never)
        .execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the pusher survives, not yet started, and starts at the given position', async () => {
      assert.ok(applied.includes('022-push-notifications'), applied.join(', '));
      const [p] = await listPushers(database.db, '@alice:example.org');
      assert.equal(p!.pushkey, 'key-1');
      assert.equal(p!.device_id, 'DEVICE');
      assert.equal(Number(p!.delivered_up_to), -1);
      assert.equal(p!.failing_since, null);
      await startNewPushers(database.db, 42);
      assert.equal(Number((await listPushers(database.db, '@alice:example.org'))[0]!.delivered_up_to), 42);
    });

    test('notifications are stored once and read in both directions', async () => {
      const row = (n: number, highlight: number) => ({
        user_id: '@alice:example.org',
        stream_ordering: n,
        room_id: '!room:example.org',
        event_nid: n,
        actions_json: '["notify"]',
        highlight,
        received_ts: 1700000000000 + n,
        thread_id: 'main',
      });
      await insertNotifications(database.db, [row(43, 0), row(44, 1), row(45, 0)]);
      await insertNotifications(database.db, [row(44, 1)]);
      assert.deepEqual((await notificationsAfter(database.db, '@alice:example.org', 43, 10)).map((r) => r.stream_ordering), [44, 45]);
      assert.deepEqual((await notificationsBefore(database.db, '@alice:example.org', { before: undefined, limit: 10, onlyHighlight: true })).map((r) => r.stream_ordering), [44]);
      assert.deepEqual((await notificationsBefore(database.db, '@alice:example.org', { before: 45, limit: 1, onlyHighlight: false })).map((r) => r.stream_ordering), [44]);
      // Pruning by age: those received before 1700000000045 go.
      await pruneNotifications(database.db, 1700000000045);
      assert.deepEqual((await notificationsAfter(database.db, '@alice:example.org', 0, 10)).map((r) => r.stream_ordering), [45]);
    });
  });
}
