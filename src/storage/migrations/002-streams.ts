// Stream positions: one monotonically increasing counter per stream (room events, receipts,
// account data, to-device, ...). A sync token is the vector of these positions.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const streams: HearthMigration = {
  name: '002-streams',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('stream_positions')
      .addColumn('stream', 'text', (c) => c.primaryKey())
      .addColumn('position', 'bigint', (c) => c.notNull())
      .execute();
  },
};
