// Upgrading a database written before migration 019 (the message search index), on SQLite and
// PostgreSQL: the events stored before survive, and the indexer's reads and writes, starting from
// position 0 as a new indexer does, make them searchable, leaving out the redacted one and what is
// not text; a redaction seen later takes its event out; a batch seen twice changes nothing.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { countMatches, indexableAfter, indexDocuments, searchIndex, searchWords, textSearchConfig, unindexEvents } from '../../src/storage/search/event-search.js';
import { documentsOf } from '../../src/rooms/search-service.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '018-media';

function eventRow(n: number, type: string, content: object, extra: { stateKey?: string; redactedBy?: string; redacts?: string } = {}) {
  const pdu = { type, room_id: '!r:hs', sender: '@a:hs', origin_server_ts: 1000 + n, content, ...(extra.stateKey !== undefined ? { state_key: extra.stateKey } : {}) };
  return {
    event_nid: n,
    event_id: `$e${n}`,
    room_nid: 1,
    type,
    state_key: extra.stateKey ?? null,
    sender: '@a:hs',
    origin_server_ts: 1000 + n,
    depth: n,
    stream_ordering: n,
    status: 'timeline',
    json: JSON.stringify(pdu),
    unsigned_json: null,
    redacts: extra.redacts ?? null,
    redacted_by: extra.redactedBy ?? null,
    rejection_reason: null,
    state_before_nid: null,
    state_after_nid: null,
    txn_device_id: null,
    txn_id: null,
  };
}

for (const backend of await storageBackends()) {
  describe(`migration 019 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    const config = textSearchConfig('en');
    const query = (term: string) => ({ words: searchWords(term), config, roomNids: [1], keys: ['content.body', 'content.name', 'content.topic'] as const });
    const hits = async (term: string) =>
      (await searchIndex(database.db, database.dialect, query(term), { order: 'recent', offset: 0, before: undefined, limit: 50 })).map((h) => h.eventNid);
    const indexFrom = async (after: number) => {
      const rows = await indexableAfter(database.db, after, 100);
      const { docs, redacted } = documentsOf(rows);
      await indexDocuments(database.db, database.dialect, config, docs);
      await unindexEvents(database.db, database.dialect, redacted);
      return rows;
    };

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      const old = database.db as never as import('kysely').Kysely<any>;
      await old.insertInto('rooms').values({ room_nid: 1, room_id: '!r:hs', room_version: '10', creator: '@a:hs', created_ts: 0, is_public: 0, joined_members: 1, invited_members: 0 }).execute();
      await old
        .insertInto('events')
        .values([
          eventRow(1, 'm.room.name', { name: 'Otter Lodge' }, { stateKey: '' }),
          eventRow(2, 'm.room.topic', { topic: 'rivers and otters' }, { stateKey: '' }),
          eventRow(3, 'm.room.message', { msgtype: 'm.text', body: 'an otter swims' }),
          eventRow(4, 'm.room.message', { msgtype: 'm.text', body: 'the otter was redacted' }, { redactedBy: '$e5' }),
          eventRow(5, 'm.room.redaction', {}, { redacts: '$e4' }),
          eventRow(6, 'm.room.member', { membership: 'join', displayname: 'otter fan' }, { stateKey: '@a:hs' }),
          eventRow(7, 'm.room.message', { msgtype: 'm.image', url: 'mxc://hs/x' }),
          eventRow(8, 'm.room.message', { msgtype: 'm.text', body: 'beavers build dams' }),
        ])
        .execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the stored events survive; the index starts empty', async () => {
      assert.ok(applied.includes('019-search'), applied.join(', '));
      assert.equal((await database.db.selectFrom('events').select('event_nid').execute()).length, 8);
      assert.deepEqual(await hits('otter'), []);
    });

    test('indexing from position 0 makes the old events searchable, as a new indexer does', async () => {
      const rows = await indexFrom(0);
      // Every timeline event is read (the member event too, without its JSON), each once.
      assert.deepEqual(rows.map((r) => r.position), [1, 2, 3, 4, 5, 6, 7, 8]);
      assert.equal(rows.find((r) => r.position === 6)!.json, '{}');
      assert.deepEqual(await hits('otter'), [3, 2, 1]);
      assert.deepEqual(await hits('beaver'), [8]);
      assert.equal(await countMatches(database.db, database.dialect, query('otter')), 3);
      const ranked = await searchIndex(database.db, database.dialect, { ...query('otter'), keys: ['content.body'] }, { order: 'rank', offset: 0, before: undefined, limit: 10 });
      assert.deepEqual(ranked.map((h) => h.eventNid), [3]);
    });

    test('a batch seen twice changes nothing; a later redaction takes its event out', async () => {
      await indexFrom(0);
      assert.deepEqual(await hits('otter'), [3, 2, 1]);
      await (database.db as never as import('kysely').Kysely<any>)
        .insertInto('events')
        .values(eventRow(9, 'm.room.redaction', {}, { redacts: '$e3' }))
        .execute();
      await database.db.updateTable('events').set({ redacted_by: '$e9' }).where('event_nid', '=', 3).execute();
      await indexFrom(8);
      assert.deepEqual(await hits('otter'), [2, 1]);
    });
  });
}
