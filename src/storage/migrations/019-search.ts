// The message search index (see tables/search.ts): one row per searchable timeline event, keyed by
// its events-stream position. SQLite matches words with an FTS5 table whose rowid is that position
// (contentless: the text is read from the event itself); PostgreSQL keeps a tsvector per row under
// a GIN index. The index is filled by the search indexer from the events stream, from position 0
// on a database that had none: upgrading needs nothing more here.

import { sql, type Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const search: HearthMigration = {
  name: '019-search',
  async up(db: Kysely<unknown>, dialect) {
    let table = db.schema
      .createTable('event_search')
      .addColumn('position', 'bigint', (c) => c.primaryKey())
      .addColumn('event_nid', 'bigint', (c) => c.notNull().unique())
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull());
    if (dialect === 'postgres') table = table.addColumn('vector', sql`tsvector`, (c) => c.notNull());
    await table.execute();
    await db.schema.createIndex('event_search_by_room').on('event_search').columns(['room_nid', 'position']).execute();
    if (dialect === 'postgres') {
      await sql`CREATE INDEX event_search_vector ON event_search USING GIN (vector)`.execute(db);
    } else {
      // unicode61 folds case and diacritics in any language; prefix queries stand in for stemming.
      await sql`CREATE VIRTUAL TABLE event_search_fts USING fts5(value, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2')`.execute(db);
    }
  },
};
