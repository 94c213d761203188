// Application services' ephemeral data (typing, receipts, presence, to-device messages): how far
// each service was sent the receipts, presence and to-device streams, and what the pending
// transaction covers of them (see tables/appservice.ts).

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const appserviceEphemeral: HearthMigration = {
  name: '017-appservice-ephemeral',
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('appservice_queues').addColumn('ephemeral_positions', 'text').execute();
    await db.schema.alterTable('appservice_queues').addColumn('pending_ephemeral_positions', 'text').execute();
  },
};
