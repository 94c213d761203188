// Per-user data: profiles, account data, filters, receipts, to-device messages, presence.

import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import { serialType } from './column-types.js';
import type { HearthMigration } from './index.js';

export const userData: HearthMigration = {
  name: '004-user-data',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    const serial = serialType(dialect);

    await db.schema
      .createTable('profiles')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('displayname', 'text')
      .addColumn('avatar_url', 'text')
      .addColumn('search_key', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('account_data')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('stream_position', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('account_data_pk', ['user_id', 'room_id', 'type'])
      .execute();
    await db.schema
      .createIndex('account_data_user_position')
      .on('account_data')
      .columns(['user_id', 'stream_position'])
      .execute();

    await db.schema
      .createTable('filters')
      .addColumn('filter_id', serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('filter_hash', 'text', (c) => c.notNull())
      .addColumn('filter_json', 'text', (c) => c.notNull())
      .addUniqueConstraint('filters_user_hash', ['user_id', 'filter_hash'])
      .execute();

    await db.schema
      .createTable('receipts')
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('receipt_type', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('thread_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_order', 'bigint')
      .addColumn('ts', 'bigint', (c) => c.notNull())
      .addColumn('stream_position', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('receipts_pk', ['room_id', 'receipt_type', 'user_id', 'thread_id'])
      .execute();
    await db.schema
      .createIndex('receipts_room_position')
      .on('receipts')
      .columns(['room_id', 'stream_position'])
      .execute();

    await db.schema
      .createTable('to_device_messages')
      .addColumn('message_id', serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('stream_position', 'bigint', (c) => c.notNull())
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('to_device_recipient_position')
      .on('to_device_messages')
      .columns(['user_id', 'device_id', 'stream_position'])
      .execute();

    await db.schema
      .createTable('to_device_txns')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('txn_id', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('to_device_txns_pk', ['user_id', 'device_id', 'txn_id'])
      .execute();

    await db.schema
      .createTable('presence')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('status_msg', 'text')
      .addColumn('last_active_ts', 'bigint', (c) => c.notNull())
      .addColumn('stream_position', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('presence_position').on('presence').column('stream_position').execute();
    await db.schema.createIndex('presence_state').on('presence').column('state').execute();
  },
};
