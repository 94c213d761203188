// Upgrading a database written before migration 010 (stream consumers), on SQLite and PostgreSQL:
// the stream positions and to-device messages written then survive, and a consumer on the upgraded
// database starts from the beginning of the stream and works through them.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { allocateStreamPosition, currentStreamPositions } from '../../src/storage/streams.js';
import { insertToDeviceMessages, selectToDevice } from '../../src/storage/user-data/to-device.js';
import { StreamConsumer } from '../../src/streams/consumer.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const BEFORE = '008-erased-users';
const ALICE = '@alice:hs';

for (const backend of await storageBackends()) {
  describe(`migration 010 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    const written: number[] = [];
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      // Rows as the schema before 010 holds them: stream positions and queued to-device messages.
      const db = database.db;
      await allocateStreamPosition(db, 'events');
      for (let i = 0; i < 3; i++) {
        const position = await allocateStreamPosition(db, 'to_device');
        await insertToDeviceMessages(db, [{ userId: ALICE, deviceId: 'PHONE', sender: '@bob:hs', type: 'm.test', content: { i } }], position);
        written.push(position);
      }
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the rows written before survive; the consumers table starts empty', async () => {
      assert.ok(applied.includes('010-stream-consumers'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      const positions = await currentStreamPositions(database.db);
      assert.deepEqual([positions.events, positions.to_device], [1, 3]);
      assert.deepEqual(await database.db.selectFrom('stream_consumers').selectAll().execute(), []);
    });

    test('a consumer on the upgraded database works through the rows written before', async () => {
      const bus = new InProcessBus(await currentStreamPositions(database.db));
      const seen: number[] = [];
      const consumer = new StreamConsumer({
        name: 'upgrade',
        stream: 'to_device',
        db: database.db,
        bus,
        read: (after, limit) => selectToDevice(database.db, ALICE, 'PHONE', after, Number.MAX_SAFE_INTEGER, limit),
        handle: async (rows) => void seen.push(...rows.map((r) => r.position)),
        log: { warn: (message) => assert.fail(message) },
      });
      await consumer.start();
      await eventually(() => consumer.position === 3 && consumer.idle, 'caught up');
      await consumer.stop();
      assert.deepEqual(seen, written);
      const row = await database.db.selectFrom('stream_consumers').selectAll().executeTakeFirstOrThrow();
      assert.deepEqual([row.name, row.stream, Number(row.position)], ['upgrade', 'to_device', 3]);
    });
  });
}
