// Upgrading a database written before migration 023 (event relations), on SQLite and PostgreSQL:
// the relations of events stored before it are read from their JSON (a reaction, a thread event,
// an edit), the events they relate to are marked, and redacted, rejected and unrelated events are
// left out.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import { relationsOf, threadSummaries } from '../../src/storage/rooms/relations.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '022-push-notifications';

function eventRow(n: number, content: object, extra: { status?: string; redactedBy?: string; type?: string } = {}) {
  const type = extra.type ?? 'm.room.message';
  const pdu = { type, room_id: '!r:hs', sender: '@a:hs', origin_server_ts: 1000 + n, content };
  return {
    event_nid: n,
    event_id: `$e${n}`,
    room_nid: 1,
    type,
    state_key: null,
    sender: '@a:hs',
    origin_server_ts: 1000 + n,
    depth: n,
    stream_ordering: extra.status === 'rejected' ? null : n,
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
  describe(`migration 023 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      const old = database.db as never as Kysely<any>;
      await old.insertInto('rooms').values({ room_nid: 1, room_id: '!r:hs', room_version: '10', creator: '@a:hs', created_ts: 0, is_public: 0, joined_members: 1, invited_members: 0 }).execute();
      const rel = (relType: string, eventId: string, more: object = {}) => ({ 'm.relates_to': { rel_type: relType, event_id: eventId, ...more } });
      await old
        .insertInto('events')
        .values([
          eventRow(1, { msgtype: 'm.text', body: 'root' }),
          eventRow(2, rel('m.annotation', '$e1', { key: '👍' }), { type: 'm.reaction' }),
          eventRow(3, { msgtype: 'm.text', body: 'in the thread', ...rel('m.thread', '$e1') }),
          eventRow(4, { msgtype: 'm.text', body: '* edited', 'm.new_content': { msgtype: 'm.text', body: 'edited' }, ...rel('m.replace', '$e1') }),
          eventRow(5, rel('m.annotation', '$e1', { key: '👎' }), { type: 'm.reaction', redactedBy: '$gone' }),
          eventRow(6, rel('m.annotation', '$e1', { key: '🎉' }), { type: 'm.reaction', status: 'rejected' }),
          eventRow(7, { msgtype: 'm.text', body: 'a reply, not a relation', 'm.relates_to': { 'm.in_reply_to': { event_id: '$e1' } } }),
          eventRow(8, { msgtype: 'm.text', body: 'mentions m.relates_to in its text' }),
        ])
        .execute();
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the relations of stored events are read from their JSON', async () => {
      assert.ok(applied.includes('023-event-relations'), applied.join(', '));
      const rows = await relationsOf(database.db, { roomNid: 1, targets: ['$e1'], dir: 'f', limit: 100 });
      assert.deepEqual(
        rows.map((r) => [r.eventId, r.relType, r.type, r.key, r.position]),
        [
          ['$e2', 'm.annotation', 'm.reaction', '👍', 2],
          ['$e3', 'm.thread', 'm.room.message', null, 3],
          ['$e4', 'm.replace', 'm.room.message', null, 4],
        ],
      );
      assert.deepEqual(await threadSummaries(database.db, ['$e1'], [1]), [{ root: '$e1', roomNid: 1, count: 1, latestPosition: 3 }]);
      // Relations count only in the room of the event they relate to.
      assert.deepEqual(await threadSummaries(database.db, ['$e1'], [2]), []);
    });

    test('only the event related to is marked', async () => {
      const marked = await database.db.selectFrom('events').select(['event_id', 'has_relations']).orderBy('event_nid').execute();
      assert.deepEqual(
        marked.filter((r) => r.has_relations !== null).map((r) => [r.event_id, Number(r.has_relations)]),
        [['$e1', 1]],
      );
    });
  });
}
