// EDUs that must not be lost (to-device messages, device-list and signing-key updates of this
// server's users): queued per destination until the destination accepts them. And the to-device
// messages other servers sent, by (origin, sender, message_id), so that a message sent twice is
// delivered once.

import type { Kysely } from 'kysely';
import { serialType } from './column-types.js';
import type { HearthMigration } from './index.js';

export const eduQueues: HearthMigration = {
  name: '014-edu-queues',
  async up(db: Kysely<unknown>, dialect) {
    // AUTOINCREMENT on SQLite: ids are never reused, so a transaction id made from them is not either.
    await db.schema
      .createTable('federation_outbound_edus')
      .addColumn('edu_id', serialType(dialect), (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('edu_type', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('queued_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('federation_outbound_edus_destination').on('federation_outbound_edus').columns(['destination', 'edu_id']).execute();

    await db.schema
      .createTable('federation_inbound_to_device')
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('received_ts', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('federation_inbound_to_device_pk', ['origin', 'sender', 'message_id'])
      .execute();
    await db.schema.createIndex('federation_inbound_to_device_received').on('federation_inbound_to_device').column('received_ts').execute();
  },
};
