// Stream consumers: the durable position of each named consumer of a stream (streams/consumer.ts).
// Every row up to `position` has been handled; after a restart the consumer reads on from there.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const streamConsumers: HearthMigration = {
  name: '010-stream-consumers',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('stream_consumers')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('position', 'bigint', (c) => c.notNull())
      .addColumn('updated_ts', 'bigint', (c) => c.notNull())
      .execute();
  },
};
