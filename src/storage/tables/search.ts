// The message search index (migration 019). The searchable text lives in the backend's own
// structure: an FTS5 table `event_search_fts` (rowid = position) on SQLite, `vector` on PostgreSQL.
// Backfilled events wait in a queue for the indexer (migration 025).

import type { ColumnType } from 'kysely';

export interface EventSearchTable {
  /** The event's position on the events stream. */
  position: number;
  event_nid: number;
  room_nid: number;
  sender: string;
  type: string;
  /** Which field was indexed: content.body, content.name or content.topic. */
  key: string;
  /** PostgreSQL only: the field's words (written with to_tsvector). */
  vector?: ColumnType<string, never, never>;
}

/** A backfilled event the indexer has yet to look at (written with it, deleted once indexed). */
export interface SearchBackfillQueueTable {
  event_nid: number;
}

export interface SearchTables {
  event_search: EventSearchTable;
  search_backfill_queue: SearchBackfillQueueTable;
}
