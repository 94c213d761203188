// Backfilled history in the search index: the indexer follows the events stream, whose positions
// only grow, while history fetched later takes negative positions (and reserves them before its
// events are written, so no watermark over them is safe). The writer queues the backfilled events
// the index would take, in the transaction that stores them, and the indexer drains the queue.
// History backfilled before this migration is queued here.

import { sql, type Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const searchBackfill: HearthMigration = {
  name: '025-search-backfill',
  async up(db: Kysely<unknown>) {
    await db.schema.createTable('search_backfill_queue').addColumn('event_nid', 'bigint', (c) => c.primaryKey()).execute();
    await sql`INSERT INTO search_backfill_queue (event_nid)
      SELECT event_nid FROM events
      WHERE stream_ordering < 0 AND status = 'timeline'
        AND type IN ('m.room.message', 'm.room.name', 'm.room.topic', 'm.room.redaction')`.execute(db);
  },
};
