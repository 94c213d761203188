// End-to-end encryption: the device_lists stream (one row per change of a user's devices or their
// keys), device keys, one-time keys and fallback keys.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const deviceLists: HearthMigration = {
  name: '005-device-lists',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('device_list_changes')
      .addColumn('stream_position', 'bigint', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('device_list_changes_pk', ['stream_position', 'user_id'])
      .execute();

    await db.schema
      .createTable('device_keys')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('key_json', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('device_keys_pk', ['user_id', 'device_id'])
      .execute();

    await db.schema
      .createTable('one_time_keys')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('algorithm', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('key_json', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('one_time_keys_pk', ['user_id', 'device_id', 'algorithm', 'key_id'])
      .execute();

    // One per device and algorithm, handed out when the one-time keys run out (marked used then).
    await db.schema
      .createTable('fallback_keys')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('algorithm', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('key_json', 'text', (c) => c.notNull())
      .addColumn('used', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('fallback_keys_pk', ['user_id', 'device_id', 'algorithm'])
      .execute();
  },
};
