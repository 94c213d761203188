// Upgrading a database written before migration 013 (when each server joined a room), on SQLite
// and PostgreSQL: the joined servers stored before survive, joined since 0 (every event is theirs,
// as before), and servers that join afterwards are joined since their join's position.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { adjustJoinedServers, joinedServers } from '../../src/storage/rooms/graph.js';
import { insertRoom } from '../../src/storage/rooms/rooms.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

const BEFORE = '012-inbound-transactions';

for (const backend of await storageBackends()) {
  describe(`migration 013 upgrade on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let applied: string[];
    let roomNid: number;
    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateTo(database.db as never, database.dialect, BEFORE);
      roomNid = await insertRoom(database.db, { roomId: '!old:hs', version: '10', creator: '@a:hs', createdTs: 1, isPublic: false });
      // Written as the previous schema writes it: no joined_since column yet.
      await sql`insert into room_joined_servers (room_nid, server_name, joined_members) values (${roomNid}, ${'hs'}, ${2}), (${roomNid}, ${'remote.example'}, ${1})`.execute(database.db);
      applied = await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('the joined servers stored before survive, joined since 0', async () => {
      assert.ok(applied.includes('013-joined-since'), applied.join(', '));
      assert.ok(!applied.includes(BEFORE), applied.join(', '));
      assert.deepEqual(await joinedServers(database.db, roomNid), ['hs', 'remote.example']);
      const rows = await database.db.selectFrom('room_joined_servers').select(['server_name', 'joined_members', 'joined_since']).orderBy('server_name').execute();
      assert.deepEqual(rows.map((r) => [r.server_name, Number(r.joined_members), Number(r.joined_since)]), [
        ['hs', 2, 0],
        ['remote.example', 1, 0],
      ]);
    });

    test('a server joining afterwards is joined since its join; one already there keeps its start', async () => {
      await adjustJoinedServers(database.db, roomNid, new Map([['new.example', { change: 1, position: 42 }], ['remote.example', { change: 1, position: 43 }]]));
      const rows = await database.db.selectFrom('room_joined_servers').select(['server_name', 'joined_since']).orderBy('server_name').execute();
      assert.deepEqual(rows.map((r) => [r.server_name, Number(r.joined_since)]), [
        ['hs', 0],
        ['new.example', 42],
        ['remote.example', 0],
      ]);
    });
  });
}
