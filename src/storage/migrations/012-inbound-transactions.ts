// Inbound federation transactions already processed: the answer given to each origin's
// transaction id, so that a resend (the origin did not get the answer) is answered the same
// without being processed twice. Rows older than a day are pruned.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const inboundTransactions: HearthMigration = {
  name: '012-inbound-transactions',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('federation_inbound_transactions')
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('txn_id', 'text', (c) => c.notNull())
      .addColumn('answer', 'text', (c) => c.notNull())
      .addColumn('received_ts', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('federation_inbound_transactions_pk', ['origin', 'txn_id'])
      .execute();
    await db.schema.createIndex('federation_inbound_transactions_received').on('federation_inbound_transactions').column('received_ts').execute();
  },
};
