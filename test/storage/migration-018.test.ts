// Upgrading a database written before migration 018 (the media repository), on SQLite and
// PostgreSQL: an application service's delivery state and network directory survive; media and
// thumbnails are then recorded and read back, and an id made first is completed only once.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { queueState } from '../../src/storage/appservice/queues.js';
import { completeMedia, insertMedia, insertThumbnail, selectMedia, selectThumbnails } from '../../src/storage/media/media.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '017-appservice-ephemeral-directory';

for (const backend of await storageBackends()) {
  describe(`migration 018 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      await database.db
        .insertInto('appservice_queues')
        .values({ as_id: 'irc', last_txn_id: 3, delivered_position: 40, pending_txn_id: null, pending_body: null, pending_position: null, ephemeral_positions: '{"receipts":1,"presence":2,"to_device":3}', pending_ephemeral_positions: null })
        .execute();
      await database.db.insertInto('appservice_room_list').values({ as_id: 'irc', network_id: 'libera', room_id: '!r:hs' }).execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('what was stored before survives', async () => {
      assert.ok(applied.includes('018-media'), applied.join(', '));
      assert.deepEqual(await queueState(database.db, 'irc'), { lastTxnId: 3, deliveredPosition: 40, ephemeral: { receipts: 1, presence: 2, to_device: 3 } });
      assert.deepEqual(await database.db.selectFrom('appservice_room_list').selectAll().execute(), [{ as_id: 'irc', network_id: 'libera', room_id: '!r:hs' }]);
    });

    test('media and thumbnails are recorded; an id made first is completed once, by its maker', async () => {
      const base = { origin: 'hs', user_id: '@a:hs', created_ts: 1000, quarantined_by: null };
      await insertMedia(database.db, { ...base, media_id: 'Abc', content_type: 'image/png', upload_name: 'a.png', size: 5, sha256: 'ff', uploaded_ts: 1000, unused_expires_ts: null });
      assert.equal((await selectMedia(database.db, 'hs', 'Abc'))?.size, 5);
      await insertMedia(database.db, { ...base, media_id: 'Later', content_type: null, upload_name: null, size: null, sha256: null, uploaded_ts: null, unused_expires_ts: 5000 });
      const upload = { content_type: 'text/plain', upload_name: null, size: 2, sha256: 'aa', uploaded_ts: 2000 };
      assert.equal(await completeMedia(database.db, 'hs', 'Later', '@b:hs', upload), false);
      assert.equal(await completeMedia(database.db, 'hs', 'Later', '@a:hs', upload), true);
      assert.equal(await completeMedia(database.db, 'hs', 'Later', '@a:hs', upload), false);
      assert.deepEqual(
        { ...(await selectMedia(database.db, 'hs', 'Later')) },
        { ...base, media_id: 'Later', content_type: 'text/plain', upload_name: null, size: 2, sha256: 'aa', uploaded_ts: 2000, unused_expires_ts: null },
      );
      const thumb = { origin: 'hs', media_id: 'Abc', width: 32, height: 32, method: 'crop', animated: 0, content_type: 'image/png', size: 100 };
      await insertThumbnail(database.db, thumb);
      await insertThumbnail(database.db, { ...thumb, size: 120 });
      assert.deepEqual(await selectThumbnails(database.db, 'hs', 'Abc'), [{ ...thumb, size: 120 }]);
    });
  });
}
