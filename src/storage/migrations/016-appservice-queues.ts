// Application services' delivery state: per service, the transaction ids given out, how far its
// events were delivered and the transaction in flight (see tables/appservice.ts).

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const appserviceQueues: HearthMigration = {
  name: '016-appservice-queues',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('appservice_queues')
      .addColumn('as_id', 'text', (c) => c.primaryKey())
      .addColumn('last_txn_id', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('delivered_position', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('pending_txn_id', 'bigint')
      .addColumn('pending_body', 'text')
      .addColumn('pending_position', 'bigint')
      .execute();
  },
};
