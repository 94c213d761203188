// Accounts, devices, access tokens, registration tokens and user-interactive auth sessions.

import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import { serialType } from './column-types.js';
import type { HearthMigration } from './index.js';

export const accounts: HearthMigration = {
  name: '001-accounts',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    await db.schema
      .createTable('users')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('localpart', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text')
      .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_guest', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('deactivated', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('appservice_id', 'text')
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('devices')
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id').onDelete('cascade'))
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('display_name', 'text')
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_ts', 'bigint')
      .addColumn('last_seen_ip', 'text')
      .addPrimaryKeyConstraint('devices_pk', ['user_id', 'device_id'])
      .execute();

    await db.schema
      .createTable('access_tokens')
      .addColumn('token_id', serialType(dialect), (c) =>
        dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey(),
      )
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id').onDelete('cascade'))
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addColumn('valid_until_ts', 'bigint')
      .execute();
    await db.schema
      .createIndex('access_tokens_device')
      .on('access_tokens')
      .columns(['user_id', 'device_id'])
      .execute();

    await db.schema
      .createTable('registration_tokens')
      .addColumn('token', 'text', (c) => c.primaryKey())
      .addColumn('uses_allowed', 'bigint')
      .addColumn('completed', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('expiry_time', 'bigint')
      .addColumn('makes_admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('uia_sessions')
      .addColumn('session_id', 'text', (c) => c.primaryKey())
      .addColumn('operation', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      .addColumn('completed', 'text', (c) => c.notNull())
      .addColumn('params', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('uia_sessions_created').on('uia_sessions').column('created_ts').execute();

    await db.schema
      .createTable('account_counters')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'bigint', (c) => c.notNull())
      .execute();
  },
};
