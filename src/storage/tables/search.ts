// The message search index (migration 019). The searchable text lives in the backend's own
// structure: an FTS5 table `event_search_fts` (rowid = position) on SQLite, `vector` on PostgreSQL.

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

export interface SearchTables {
  event_search: EventSearchTable;
}
