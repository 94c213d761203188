// Upgrading a database written by schema 024, on SQLite and PostgreSQL, whose backfilled history
// (negative positions) the search indexer never saw: the backfilled events the index takes are
// queued, nothing else, and draining the queue with the indexer's functions makes them searchable
// (the redacted one left out), newest first after the live ones.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { dequeueBackfilled, indexableAfter, indexDocuments, queuedBackfill, searchIndex, searchWords, textSearchConfig } from '../../src/storage/search/event-search.js';
import { documentsOf } from '../../src/rooms/search-service.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '024-notification-threads';

function eventRow(nid: number, position: number | null, type: string, content: object, extra: { stateKey?: string; redactedBy?: string; status?: string } = {}) {
  const pdu = { type, room_id: '!r:hs', sender: '@a:hs', origin_server_ts: 1000 + nid, content, ...(extra.stateKey !== undefined ? { state_key: extra.stateKey } : {}) };
  return {
    event_nid: nid,
    event_id: `$e${nid}`,
    room_nid: 1,
    type,
    state_key: extra.stateKey ?? null,
    sender: '@a:hs',
    origin_server_ts: 1000 + nid,
    depth: nid,
    stream_ordering: position,
    status: extra.status ?? 'timeline',
    json: JSON.stringify(pdu),
    unsigned_json: null,
    redacts: null,
    redacted_by: extra.redactedBy ?? null,
    rejection_reason: null,
    state_before_nid: null,
    state_after_nid: null,
    txn_device_id: null,
    txn_id: null,
  };
}

for (const backend of await storageBackends()) {
  describe(`migration 025 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    const config = textSearchConfig('en');
    const hits = async (term: string) =>
      (
        await searchIndex(database.db, database.dialect, { words: searchWords(term), config, roomNids: [1], keys: ['content.body', 'content.name', 'content.topic'] }, { order: 'recent', offset: 0, before: undefined, limit: 50 })
      ).map((h) => h.eventNid);

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      const old = database.db as never as Kysely<any>;
      await old.insertInto('rooms').values({ room_nid: 1, room_id: '!r:hs', room_version: '10', creator: '@a:hs', created_ts: 0, is_public: 0, joined_members: 1, invited_members: 0 }).execute();
      await old
        .insertInto('events')
        .values([
          eventRow(1, 1, 'm.room.message', { msgtype: 'm.text', body: 'a live heron' }),
          eventRow(2, -1, 'm.room.message', { msgtype: 'm.text', body: 'a backfilled heron' }),
          eventRow(3, -2, 'm.room.message', { msgtype: 'm.text', body: 'an older heron' }),
          eventRow(4, -3, 'm.room.message', { msgtype: 'm.text', body: 'a redacted heron' }, { redactedBy: '$gone' }),
          eventRow(5, -4, 'm.room.member', { membership: 'join', displayname: 'heron fan' }, { stateKey: '@a:hs' }),
          eventRow(6, -5, 'm.room.name', { name: 'Heron Marsh' }, { stateKey: '' }),
          eventRow(7, null, 'm.room.message', { msgtype: 'm.text', body: 'an outlier heron' }, { status: 'outlier' }),
        ])
        .execute();
      // The live indexer had indexed the live message.
      await indexDocuments(database.db, database.dialect, config, documentsOf(await indexableAfter(database.db, 0, 100)).docs);
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the backfilled events the index takes are queued, nothing else', async () => {
      assert.deepEqual(applied, ['025-search-backfill']);
      const queued = (await database.db.selectFrom('search_backfill_queue').select('event_nid').orderBy('event_nid').execute()).map((r) => Number(r.event_nid));
      assert.deepEqual(queued, [2, 3, 4, 6]);
      assert.deepEqual(await hits('heron'), [1]);
    });

    test('draining the queue makes them searchable, after the live ones, and empties it', async () => {
      const { nids, rows } = await queuedBackfill(database.db, 10);
      assert.deepEqual(nids, [2, 3, 4, 6]);
      assert.deepEqual(rows.map((r) => r.position), [-1, -2, -3, -5], 'newest first');
      await indexDocuments(database.db, database.dialect, config, documentsOf(rows).docs);
      await dequeueBackfilled(database.db, nids);
      assert.deepEqual(await hits('heron'), [1, 2, 3, 6]);
      assert.deepEqual((await queuedBackfill(database.db, 10)).nids, []);
    });
  });
}
