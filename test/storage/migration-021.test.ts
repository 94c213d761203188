// Upgrading a database written before migration 021 (the admin API's rooms), on SQLite and
// PostgreSQL: a stored room and its media survive; event reports, blocked rooms and background
// deletions are then recorded and read back.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import {
  blockRoom,
  blockedRoom,
  deleteEventReport,
  deleteJob,
  eventReports,
  insertDeleteJob,
  insertEventReport,
  unblockRoom,
  updateDeleteJob,
} from '../../src/storage/admin/rooms.js';
import { insertMedia, selectMedia } from '../../src/storage/media/media.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import { insertRoom, roomById } from '../../src/storage/rooms/rooms.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '018-media';

for (const backend of await storageBackends()) {
  describe(`migration 021 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await insertRoom(database.db, { roomId: '!old:hs', version: '10', creator: '@a:hs', createdTs: 1000, isPublic: true });
      await insertMedia(database.db, { origin: 'hs', media_id: 'Abc', user_id: '@a:hs', content_type: 'image/png', upload_name: 'a.png', size: 5, sha256: 'ff', created_ts: 1000, uploaded_ts: 1000, unused_expires_ts: null, quarantined_by: null });
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('what was stored before survives', async () => {
      assert.ok(applied.includes('021-admin-rooms'), applied.join(', '));
      const room = await roomById(database.db, '!old:hs');
      assert.equal(room?.creator, '@a:hs');
      assert.equal(Number(room?.is_public), 1);
      assert.equal((await selectMedia(database.db, 'hs', 'Abc'))?.size, 5);
    });

    test('event reports are stored, paged both ways, filtered and deleted', async () => {
      const first = await insertEventReport(database.db, { received_ts: 10, room_id: '!old:hs', event_id: '$a', user_id: '@b:hs', reason: 'spam', score: -100 });
      const second = await insertEventReport(database.db, { received_ts: 20, room_id: '!old:hs', event_id: '$b', user_id: '@c:hs', reason: null, score: null });
      assert.ok(second > first);
      const back = await eventReports(database.db, { from: 0, limit: 10, dir: 'b' });
      assert.deepEqual(back.rows.map((r) => Number(r.id)), [second, first]);
      assert.equal(back.total, 2);
      const forward = await eventReports(database.db, { from: 1, limit: 1, dir: 'f', userId: '@c' });
      assert.deepEqual({ total: forward.total, rows: forward.rows.length }, { total: 1, rows: 0 });
      assert.equal(await deleteEventReport(database.db, first), true);
      assert.equal(await deleteEventReport(database.db, first), false);
    });

    test('rooms are blocked once and unblocked; deletions keep their status and outcome', async () => {
      await blockRoom(database.db, '!old:hs', '@admin:hs', 5);
      await blockRoom(database.db, '!old:hs', '@other:hs', 6);
      assert.deepEqual(await blockedRoom(database.db, '!old:hs'), { user_id: '@admin:hs' });
      await unblockRoom(database.db, '!old:hs');
      assert.equal(await blockedRoom(database.db, '!old:hs'), undefined);
      await insertDeleteJob(database.db, { deleteId: 'd1', roomId: '!old:hs', now: 7 });
      assert.equal((await deleteJob(database.db, 'd1'))?.status, 'shutting_down');
      await updateDeleteJob(database.db, 'd1', { status: 'complete', result: { kicked_users: ['@a:hs'] } });
      const job = await deleteJob(database.db, 'd1');
      assert.equal(job?.status, 'complete');
      assert.deepEqual(JSON.parse(job!.result_json!), { kicked_users: ['@a:hs'] });
    });
  });
}
