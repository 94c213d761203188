// Push notifications: what each event's push-rule evaluation decided for each local member it
// notifies (GET /notifications, the push gateway's payloads and badge counts), and how far each
// pusher was sent them (see tables/pushers.ts).

import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

export const pushNotifications: HearthMigration = {
  name: '022-push-notifications',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    // Thousands of rows a second under load: on SQLite the key is the table (no rowid tree besides).
    await db.schema
      .createTable('push_notifications')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('stream_ordering', 'bigint', (c) => c.notNull())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('event_nid', 'bigint', (c) => c.notNull())
      .addColumn('actions_json', 'text', (c) => c.notNull())
      .addColumn('highlight', 'integer', (c) => c.notNull())
      .addColumn('received_ts', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('push_notifications_pk', ['user_id', 'stream_ordering'])
      .$call((t) => (dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t))
      .execute();
    await db.schema.createIndex('push_notifications_received').on('push_notifications').column('received_ts').execute();
    await db.schema.createIndex('push_notifications_user_room').on('push_notifications').columns(['user_id', 'room_id', 'stream_ordering']).execute();
    // Pushers set before this migration start from what is notified from now on.
    await db.schema.alterTable('pushers').addColumn('delivered_up_to', 'bigint', (c) => c.notNull().defaultTo(-1)).execute();
    await db.schema.alterTable('pushers').addColumn('failing_since', 'bigint').execute();
  },
};
