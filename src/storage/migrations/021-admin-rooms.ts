// The admin API's rooms (see tables/admin-rooms.ts): reported events, blocked rooms, and the
// room deletions run in the background with their outcome.

import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

export const adminRooms: HearthMigration = {
  name: '021-admin-rooms',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    const serial = dialect === 'postgres' ? 'bigserial' : 'integer';
    await db.schema
      .createTable('event_reports')
      .addColumn('id', serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('received_ts', 'bigint', (c) => c.notNull())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('reason', 'text')
      .addColumn('score', 'integer')
      .execute();
    await db.schema.createIndex('event_reports_room').on('event_reports').column('room_id').execute();
    await db.schema
      .createTable('blocked_rooms')
      .addColumn('room_id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('room_delete_jobs')
      .addColumn('delete_id', 'text', (c) => c.primaryKey())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('result_json', 'text')
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('room_delete_jobs_room').on('room_delete_jobs').column('room_id').execute();
  },
};
