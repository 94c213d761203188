// Rooms, events and room state.

import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

export const rooms: HearthMigration = {
  name: '003-rooms',
  async up(_db: Kysely<unknown>, _dialect: DialectName) {},
};
