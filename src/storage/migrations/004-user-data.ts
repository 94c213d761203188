// Per-user data: profiles, account data, filters, receipts, to-device messages, presence.

import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

export const userData: HearthMigration = {
  name: '004-user-data',
  async up(_db: Kysely<unknown>, _dialect: DialectName) {},
};
