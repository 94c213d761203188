// The search index's count and rank window over more matches than SQLite ranks, on SQLite and
// PostgreSQL: the count is exact while the rank window holds every match in the rooms; beyond it
// SQLite scales the term's matches in the whole index by the share in the rooms (exact when the
// rooms' matches are spread evenly, as here, to within one match); a rank page carries the same count; SQLite's rank
// pages end with its window.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { countMatches, indexDocuments, searchIndex, searchWords, SQLITE_RANK_WINDOW, textSearchConfig, type SearchQuery } from '../../src/storage/search/event-search.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

/** Every third position in room 2, the others in room 1: 3,000 and 1,500 otters. */
const DOCS = 4_500;

for (const backend of await storageBackends()) {
  describe(`search count on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    const config = textSearchConfig('en');
    const query = (term: string, roomNids: number[]): SearchQuery => ({ words: searchWords(term), config, roomNids, keys: ['content.body'] });
    const count = (term: string, roomNids: number[]) => countMatches(database.db, database.dialect, query(term, roomNids));
    const rankPage = (term: string, roomNids: number[], offset: number) =>
      searchIndex(database.db, database.dialect, query(term, roomNids), { order: 'rank', offset, before: undefined, limit: 10 });

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateToLatest(database.db as never, database.dialect);
      const docs = Array.from({ length: DOCS }, (_, i) => {
        const position = i + 1;
        const body = position % 100 === 0 ? 'an otter and a beaver' : `otter number ${position}`;
        return { position, eventNid: position, roomNid: position % 3 === 0 ? 2 : 1, sender: '@a:hs', type: 'm.room.message', key: 'content.body' as const, value: body };
      });
      await indexDocuments(database.db, database.dialect, config, docs);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('counts are exact or scaled by the share of the matches in the rooms', async () => {
      assert.equal(await count('otter', [1, 2]), 4_500);
      assert.equal(await count('otter', [1]), 3_000);
      // SQLite: room 2's newest 1,000 reach back over 2,998 of the 4,500 matches.
      assert.equal(await count('otter', [2]), database.dialect === 'sqlite' ? 1_501 : 1_500);
      assert.equal(await count('beaver', [1, 2]), 45);
      assert.equal(await count('beaver', [2]), 15);
      assert.equal(await count('walrus', [1, 2]), 0);
    });

    test('a rank page carries the count', async () => {
      for (const rooms of [[1, 2], [1], [2]]) {
        const hits = await rankPage('otter', rooms, 0);
        assert.equal(hits.length, 10);
        assert.equal(hits[0]!.count, await count('otter', rooms));
        assert.ok(hits.every((h) => rooms.includes(h.roomNid)));
      }
    });

    test("SQLite ranks the rooms' newest matches only", { skip: backend.name !== 'sqlite' }, async () => {
      assert.equal((await rankPage('otter', [1], SQLITE_RANK_WINDOW - 10)).length, 10);
      assert.deepEqual(await rankPage('otter', [1], SQLITE_RANK_WINDOW), []);
      const ranked = await rankPage('otter', [1], 0);
      // The oldest of room 1's newest 1,000 matches is at 3,001.
      assert.ok(ranked.every((h) => h.position >= 3_001));
    });
  });
}
