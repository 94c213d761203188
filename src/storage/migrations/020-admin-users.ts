// The admin API's account attributes (see tables/admin-users.ts): third-party identifiers,
// external identities, account types and per-user rate-limit overrides.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const adminUsers: HearthMigration = {
  name: '020-admin-users',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('user_threepids')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('medium', 'text', (c) => c.notNull())
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('validated_at', 'bigint', (c) => c.notNull())
      .addColumn('added_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('user_threepids_pk', ['medium', 'address'])
      .execute();
    await db.schema.createIndex('user_threepids_by_user').on('user_threepids').column('user_id').execute();
    await db.schema
      .createTable('user_external_ids')
      .addColumn('auth_provider', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('user_external_ids_pk', ['auth_provider', 'external_id'])
      .execute();
    await db.schema.createIndex('user_external_ids_by_user').on('user_external_ids').column('user_id').execute();
    await db.schema
      .createTable('user_types')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('user_type', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('ratelimit_overrides')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('messages_per_second', 'double precision', (c) => c.notNull())
      .addColumn('burst_count', 'double precision', (c) => c.notNull())
      .execute();
  },
};
