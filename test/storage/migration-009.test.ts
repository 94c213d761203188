// Upgrading a database written before migration 009 (the event graph), on SQLite and PostgreSQL.
// The rooms are made by the room service on a scratch database (a v1 room, whose events cite
// [id, {sha256}] pairs, and a v10 room, with joins, state changes, messages and a redaction), then
// their rows are written into a database at 008, with a rejected event beside them. After the
// upgrade every event keeps its position (the rejected one loses it), the graph tables hold what
// the events' JSON cites, and the state deltas, latest positions and joined servers match the rooms.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateTo } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { createSqliteDatabase, storageBackends, type TestDatabase } from '../support/databases.js';
import { roomsHarness, user } from '../rooms/helpers.js';

const BEFORE = '008-erased-users';
const alice = user('alice');
const bob = user('bob');
const REMOTE = '@dave:remote.example';

// Untyped access: the rows are those of the schema before 009.
type AnyDb = Kysely<any>;

/** The ids a PDU field cites, in either shape. */
function cited(refs: unknown): string[] {
  return (refs as unknown[]).map((r) => (Array.isArray(r) ? (r[0] as string) : (r as string)));
}

interface Written {
  v1RoomId: string;
  v10RoomId: string;
  tables: Record<string, Record<string, unknown>[]>;
}

/** Rooms made by today's room service, as rows of the tables 008 already had. */
async function writeRooms(): Promise<Written> {
  const scratch = await createSqliteDatabase();
  const h = await roomsHarness(scratch);
  try {
    const v1 = await h.rooms.createRoom(alice, { roomVersion: '1', preset: 'public_chat', name: 'old' });
    await h.rooms.join(bob, v1.roomId);
    await h.rooms.sendState(alice, v1.roomId, 'm.room.topic', '', { topic: 'one' });
    await h.rooms.sendMessage(bob, v1.roomId, 'm.room.message', { body: 'hi' });
    await h.rooms.sendState(alice, v1.roomId, 'm.room.topic', '', { topic: 'two' });
    const v10 = await h.rooms.createRoom(alice, { roomVersion: '10', preset: 'private_chat' });
    await h.rooms.invite(alice, v10.roomId, bob.userId);
    await h.rooms.join(bob, v10.roomId);
    const gone = await h.rooms.sendMessage(bob, v10.roomId, 'm.room.message', { body: 'oops' });
    await h.rooms.redact(bob, v10.roomId, gone);
    await h.rooms.leave(bob, v10.roomId);
    const db = h.database.db as AnyDb;
    const tables: Written['tables'] = {};
    for (const t of ['rooms', 'event_state_keys', 'events', 'state_snapshots', 'state_snapshot_entries', 'room_memberships', 'forward_extremities', 'stream_positions']) {
      tables[t] = await db.selectFrom(t).selectAll().execute();
    }
    return { v1RoomId: v1.roomId, v10RoomId: v10.roomId, tables };
  } finally {
    await h.close();
    await scratch.drop();
  }
}

for (const backend of await storageBackends()) {
  describe(`migration 009 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let written: Written;
    let rejectedId: string;
    let applied: string[];
    const db = () => database.db;

    before(async () => {
      written = await writeRooms();
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      const old = database.db as AnyDb;
      for (const [table, rows] of Object.entries(written.tables)) {
        for (const row of rows) {
          // Before 009 an event row had `rejected` and no status; a room had no latest position.
          // (An event row's relations mark came with 023.)
          const { status, latest_position: _latest, has_relations: _related, ...rest } = row as { status?: string; latest_position?: unknown; has_relations?: unknown };
          const values = table === 'events' ? { ...rest, rejected: status === 'rejected' ? 1 : 0 } : rest;
          await old.insertInto(table).values(values).execute();
        }
      }
      // A member from another server (as a federated join will write).
      const v10 = written.tables['rooms']!.find((r) => r['room_id'] === written.v10RoomId)!;
      const v1 = written.tables['rooms']!.find((r) => r['room_id'] === written.v1RoomId)!;
      const anyEvent = written.tables['events']!.find((e) => e['room_nid'] === v1['room_nid'])!;
      await old.insertInto('room_memberships').values({ room_nid: v1['room_nid'], user_id: REMOTE, membership: 'join', event_nid: anyEvent['event_nid'], stream_ordering: anyEvent['stream_ordering'], forgotten: 0 }).execute();
      // A rejected event citing a prev event this server lacks.
      const create = written.tables['events']!.find((e) => e['room_nid'] === v10['room_nid'] && e['type'] === 'm.room.create')!;
      const maxPosition = Math.max(...written.tables['events']!.map((e) => Number(e['stream_ordering'])));
      const maxNid = Math.max(...written.tables['events']!.map((e) => Number(e['event_nid'])));
      rejectedId = '$rejected-topic';
      const pdu = { type: 'm.room.topic', state_key: '', sender: REMOTE, room_id: written.v10RoomId, content: { topic: 'spam' }, prev_events: ['$missing-prev'], auth_events: [create['event_id'], '$missing-auth'], depth: 9, origin_server_ts: 5 };
      await old
        .insertInto('events')
        .values({ event_nid: maxNid + 1, event_id: rejectedId, room_nid: v10['room_nid'], type: 'm.room.topic', state_key: '', sender: REMOTE, origin_server_ts: 5, depth: 9, stream_ordering: maxPosition + 1, json: JSON.stringify(pdu), unsigned_json: null, redacts: null, redacted_by: null, rejected: 1, rejection_reason: 'not allowed', state_before_nid: null, state_after_nid: null, txn_device_id: null, txn_id: null })
        .execute();
      if (database.dialect === 'postgres') {
        // Rows were written with their own ids: move each sequence past them.
        for (const [table, column] of [['rooms', 'room_nid'], ['event_state_keys', 'state_key_nid'], ['events', 'event_nid'], ['state_snapshots', 'snapshot_nid']] as const) {
          await sql`select setval(pg_get_serial_sequence(${table}, ${column}), (select max(${sql.ref(column)}) from ${sql.table(table)}))`.execute(old);
        }
      }
      applied = await migrateTo(database.db as never, database.dialect, '009-event-graph');
    });
    after(async () => {
      await database?.close();
      await target?.drop();
    });

    const oldEvents = () => written.tables['events']!;
    const roomNid = (roomId: string) => Number(written.tables['rooms']!.find((r) => r['room_id'] === roomId)!['room_nid']);

    test('every event keeps its row and position; the rejected one is off the timeline', async () => {
      assert.deepEqual(applied, ['009-event-graph']);
      const rows = await db().selectFrom('events').select(['event_id', 'event_nid', 'stream_ordering', 'status', 'rejection_reason', 'json', 'redacted_by']).orderBy('event_nid').execute();
      assert.equal(rows.length, oldEvents().length + 1);
      for (const old of oldEvents()) {
        const row = rows.find((r) => r.event_id === old['event_id'])!;
        assert.deepEqual(
          [row.event_nid, row.stream_ordering, row.status, row.json, row.redacted_by],
          [old['event_nid'], old['stream_ordering'], 'timeline', old['json'], old['redacted_by']],
          String(old['event_id']),
        );
      }
      const rejected = rows.find((r) => r.event_id === rejectedId)!;
      assert.deepEqual([rejected.status, rejected.stream_ordering, rejected.rejection_reason], ['rejected', null, 'not allowed']);
      assert.ok(oldEvents().some((e) => e['redacted_by'] !== null), 'the redaction is kept');
    });

    test('event_auth and event_edges hold what each event cites; v1 pairs are read by id', async () => {
      const v1Message = oldEvents().find((e) => e['room_nid'] === roomNid(written.v1RoomId) && e['type'] === 'm.room.message')!;
      const v1Pdu = JSON.parse(String(v1Message['json'])) as { prev_events: unknown[] };
      assert.ok(Array.isArray(v1Pdu.prev_events[0]), 'v1 events cite [id, hashes] pairs');

      const all = await db().selectFrom('events').select(['event_nid', 'json']).execute();
      const expectedAuth = all.flatMap((e) => cited((JSON.parse(e.json) as { auth_events: unknown }).auth_events).map((id) => `${e.event_nid} ${id}`)).sort();
      const expectedEdges = all.flatMap((e) => cited((JSON.parse(e.json) as { prev_events: unknown }).prev_events).map((id) => `${e.event_nid} ${id}`)).sort();
      const auth = (await db().selectFrom('event_auth').selectAll().execute()).map((r) => `${r.event_nid} ${r.auth_event_id}`).sort();
      const edges = (await db().selectFrom('event_edges').selectAll().execute()).map((r) => `${r.event_nid} ${r.prev_event_id}`).sort();
      assert.deepEqual(auth, expectedAuth);
      assert.deepEqual(edges, expectedEdges);
      assert.ok(auth.length > all.length && edges.length > 0);
      // Only the rejected event cites a prev event this server lacks.
      const backward = await db().selectFrom('backward_extremities').selectAll().execute();
      assert.deepEqual(backward.map((r) => [r.room_nid, r.event_id]), [[roomNid(written.v10RoomId), '$missing-prev']]);
    });

    test('a current-state delta per timeline state event, from the event before it at that key', async () => {
      const keys = await db().selectFrom('event_state_keys').selectAll().execute();
      const keyNid = (type: string, stateKey: string) => Number(keys.find((k) => k.event_type === type && k.state_key === stateKey)!.state_key_nid);
      const last = new Map<string, number>();
      const expected: (number | null)[][] = [];
      for (const e of [...oldEvents()].sort((a, b) => Number(a['stream_ordering']) - Number(b['stream_ordering']))) {
        if (e['state_key'] === null) continue;
        const key = `${String(e['room_nid'])} ${keyNid(String(e['type']), String(e['state_key']))}`;
        expected.push([
          Number(e['stream_ordering']),
          Number(e['room_nid']),
          keyNid(String(e['type']), String(e['state_key'])),
          Number(e['event_nid']),
          last.get(key) ?? null,
          Number(e['state_after_nid']),
        ]);
        last.set(key, Number(e['event_nid']));
      }
      const deltas = await db().selectFrom('current_state_deltas').selectAll().orderBy('position').execute();
      assert.deepEqual(
        deltas.map((d) => [d.position, d.room_nid, d.state_key_nid, d.event_nid, d.prev_event_nid, d.snapshot_nid]),
        expected,
      );
      // The topic changed twice in the v1 room: the second delta replaces the first.
      const topics = deltas.filter((d) => d.room_nid === roomNid(written.v1RoomId) && d.state_key_nid === keyNid('m.room.topic', ''));
      assert.equal(topics.length, 2);
      assert.equal(topics[1]!.prev_event_nid, topics[0]!.event_nid);
    });

    test('latest positions and joined servers', async () => {
      const rooms = await db().selectFrom('rooms').select(['room_id', 'latest_position']).execute();
      for (const r of rooms) {
        const positions = oldEvents().filter((e) => e['room_nid'] === roomNid(r.room_id)).map((e) => Number(e['stream_ordering']));
        assert.equal(r.latest_position, Math.max(...positions), r.room_id);
      }
      const servers = await db().selectFrom('room_joined_servers').selectAll().orderBy('room_nid').orderBy('server_name').execute();
      assert.deepEqual(
        servers.map((s) => [s.room_nid, s.server_name, s.joined_members]),
        [
          [roomNid(written.v1RoomId), 'hs.test', 2],
          [roomNid(written.v1RoomId), 'remote.example', 1],
          // Bob left the v10 room.
          [roomNid(written.v10RoomId), 'hs.test', 1],
        ].sort((a, b) => Number(a[0]) - Number(b[0])),
      );
    });

    test('the upgraded database takes new events and serves the old ones', async () => {
      const h = await roomsHarness(target);
      try {
        const eventId = await h.rooms.sendMessage(alice, written.v1RoomId, 'm.room.message', { body: 'after' });
        const stored = (await h.rooms.reader.event(eventId))!;
        assert.equal(stored.status, 'timeline');
        assert.ok(stored.streamOrdering! > Math.max(...oldEvents().map((e) => Number(e['stream_ordering']))));
        assert.ok(stored.nid > Math.max(...oldEvents().map((e) => Number(e['event_nid']))));
        const page = await h.rooms.messages(alice, written.v1RoomId, { dir: 'b', limit: 3 });
        assert.deepEqual(page.chunk.map((e) => e.content['body'] ?? e.content['topic']), ['after', 'two', 'hi']);
        // The rejected event is never served.
        assert.equal((await h.rooms.reader.event(rejectedId))?.status, 'rejected');
        const v10 = await h.rooms.messages(alice, written.v10RoomId, { dir: 'b', limit: 50 });
        assert.ok(!v10.chunk.some((e) => e.event_id === rejectedId));
      } finally {
        await h.close();
      }
      if (database.dialect === 'sqlite') {
        const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'events' and name not like 'sqlite_%' order by name`.execute(db());
        assert.deepEqual(rows.map((r) => r.name), ['events_member_target', 'events_redacts', 'events_room_state', 'events_room_stream', 'events_txn']);
      }
    });
  });
}

for (const backend of await storageBackends()) {
  describe(`migration 009 failing halfway on ${backend.name}`, { skip: backend.skip }, () => {
    test('leaves the database as it was at 008, and runs again once the cause is gone', async () => {
      const target = await backend.create();
      const database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      try {
        await migrateTo(database.db as never, database.dialect, BEFORE);
        const old = database.db as AnyDb;
        await old.insertInto('rooms').values({ room_nid: 1, room_id: '!r:hs', room_version: '10', creator: '@a:hs', created_ts: 0, is_public: 0, joined_members: 0, invited_members: 0 }).execute();
        const row = { event_nid: 1, event_id: '$e', room_nid: 1, type: 'm.room.message', state_key: null, sender: '@a:hs', origin_server_ts: 0, depth: 1, stream_ordering: 1, json: 'not json', unsigned_json: null, redacts: null, redacted_by: null, rejected: 0, rejection_reason: null, state_before_nid: null, state_after_nid: null, txn_device_id: null, txn_id: null };
        await old.insertInto('events').values(row).execute();
        await assert.rejects(migrateTo(database.db as never, database.dialect, '009-event-graph'), /009-event-graph/);
        // Still the table of 008, with its row; none of the new tables.
        assert.deepEqual(await old.selectFrom('events').select(['event_id', 'rejected', 'stream_ordering']).execute(), [{ event_id: '$e', rejected: 0, stream_ordering: 1 }]);
        await assert.rejects(old.selectFrom('event_auth').selectAll().execute());

        await old.updateTable('events').set({ json: JSON.stringify({ prev_events: [], auth_events: ['$create'] }) }).execute();
        assert.deepEqual(await migrateTo(database.db as never, database.dialect, '009-event-graph'), ['009-event-graph']);
        assert.deepEqual(await database.db.selectFrom('event_auth').selectAll().execute(), [{ event_nid: 1, auth_event_id: '$create' }]);
        assert.deepEqual(await database.db.selectFrom('events').select(['status', 'stream_ordering']).execute(), [{ status: 'timeline', stream_ordering: 1 }]);
      } finally {
        await database.close();
        await target.drop();
      }
    });
  });
}
