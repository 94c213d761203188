// Other servers' users' device lists, kept for the users sharing a room with ours: per user, the
// last `stream_id` of theirs applied, whether the copy may have missed a change (`stale`), since
// when they had shared a room with ours when it was fetched (`shared_since`, an events-stream
// position), and their cross-signing keys; per device, its keys and display name.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const remoteDeviceLists: HearthMigration = {
  name: '015-remote-device-lists',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('remote_device_lists')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('stream_id', 'bigint', (c) => c.notNull())
      .addColumn('stale', 'integer', (c) => c.notNull())
      .addColumn('shared_since', 'bigint', (c) => c.notNull())
      .addColumn('master_key', 'text')
      .addColumn('self_signing_key', 'text')
      .addColumn('updated_ts', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('remote_devices')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('key_json', 'text')
      .addColumn('display_name', 'text')
      .addPrimaryKeyConstraint('remote_devices_pk', ['user_id', 'device_id'])
      .execute();
  },
};
