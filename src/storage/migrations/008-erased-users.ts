// Erased users: one row per user whose data was erased on deactivation.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const erasedUsers: HearthMigration = {
  name: '008-erased-users',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('erased_users')
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('erased_ts', 'bigint', (c) => c.notNull())
      .execute();
  },
};
