// Upgrading a database written by schema 023 (push notifications without threads), on SQLite and
// PostgreSQL: each stored notification is given its thread (its own m.thread relation, or that of
// the events it relates to, up to 3 hops; 'main' otherwise), and counts per thread read them.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import { countNotifications } from '../../src/storage/push/notifications.js';
import { threadsOf } from '../../src/storage/rooms/relations.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '023-event-relations';
const USER = '@b:hs';

function eventRow(n: number, content: object) {
  const pdu = { type: 'm.room.message', room_id: '!r:hs', sender: '@a:hs', origin_server_ts: 1000 + n, content };
  return {
    event_nid: n,
    event_id: `$e${n}`,
    room_nid: 1,
    type: 'm.room.message',
    state_key: null,
    sender: '@a:hs',
    origin_server_ts: 1000 + n,
    depth: n,
    stream_ordering: n,
    status: 'timeline',
    json: JSON.stringify(pdu),
    unsigned_json: null,
    redacts: null,
    redacted_by: null,
    rejection_reason: null,
    state_before_nid: null,
    state_after_nid: null,
    txn_device_id: null,
    txn_id: null,
  };
}

/** Event n relates to event `to` by `relType`. */
function relationRow(n: number, relType: string, to: number) {
  return { event_nid: n, event_id: `$e${n}`, room_nid: 1, relates_to: `$e${to}`, rel_type: relType, type: 'm.room.message', sender: '@a:hs', aggregation_key: null, stream_ordering: n, origin_server_ts: 1000 + n };
}

for (const backend of await storageBackends()) {
  describe(`migration 024 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      const old = database.db as never as Kysely<any>;
      await old.insertInto('rooms').values({ room_nid: 1, room_id: '!r:hs', room_version: '10', creator: '@a:hs', created_ts: 0, is_public: 0, joined_members: 2, invited_members: 0 }).execute();
      // $e1 a root; $e2 in its thread; $e3 references $e2, $e4 references $e3, $e5 edits $e4 (1 to
      // 3 hops to the thread); $e6 references the root (main); $e7 a plain message; $e8 follows
      // four relations before the thread (too far: main).
      const relations = [relationRow(2, 'm.thread', 1), relationRow(3, 'm.reference', 2), relationRow(4, 'm.reference', 3), relationRow(5, 'm.replace', 4), relationRow(6, 'm.reference', 1), relationRow(8, 'm.reference', 5)];
      await old.insertInto('events').values([1, 2, 3, 4, 5, 6, 7, 8].map((n) => eventRow(n, { msgtype: 'm.text', body: `event ${n}` }))).execute();
      await old.insertInto('event_relations').values(relations).execute();
      await old
        .insertInto('push_notifications')
        .values([1, 2, 3, 4, 5, 6, 7, 8].map((n) => ({ user_id: USER, stream_ordering: n, room_id: '!r:hs', event_nid: n, actions_json: '["notify"]', highlight: n === 3 ? 1 : 0, received_ts: 5000 + n })))
        .execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('each stored notification is given its thread', async () => {
      assert.ok(applied.includes('024-notification-threads'), applied.join(', '));
      const rows = await database.db.selectFrom('push_notifications').select(['stream_ordering', 'thread_id']).orderBy('stream_ordering').execute();
      assert.deepEqual(
        rows.map((r) => [Number(r.stream_ordering), r.thread_id]),
        [[1, 'main'], [2, '$e1'], [3, '$e1'], [4, '$e1'], [5, '$e1'], [6, 'main'], [7, 'main'], [8, 'main']],
      );
      // The same as the running server finds them.
      const threads = await threadsOf(database.db, ['$e1', '$e2', '$e3', '$e4', '$e5', '$e6', '$e7', '$e8']);
      assert.deepEqual(Object.fromEntries(threads), { $e1: 'main', $e2: '$e1', $e3: '$e1', $e4: '$e1', $e5: '$e1', $e6: 'main', $e7: 'main', $e8: 'main' });
    });

    test('notifications are counted per thread, each thread from its own position', async () => {
      const counts = await countNotifications(database.db, USER, [
        { roomId: '!r:hs', after: 0, upTo: 8, except: ['$e1'] },
        { roomId: '!r:hs', after: 2, upTo: 8, thread: '$e1' },
      ]);
      assert.deepEqual(Object.fromEntries(counts.get('!r:hs') ?? []), { main: { notifications: 4, highlights: 0 }, $e1: { notifications: 3, highlights: 1 } });
    });
  });
}
