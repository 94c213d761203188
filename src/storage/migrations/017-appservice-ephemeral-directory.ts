// Application services' ephemeral data (typing, receipts, presence, to-device messages): how far
// each service was sent the receipts, presence and to-device streams, and what the pending
// transaction covers of them; and the rooms services publish in their networks' room directories
// (see tables/appservice.ts).

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const appserviceEphemeral: HearthMigration = {
  name: '017-appservice-ephemeral-directory',
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('appservice_queues').addColumn('ephemeral_positions', 'text').execute();
    await db.schema.alterTable('appservice_queues').addColumn('pending_ephemeral_positions', 'text').execute();
    await db.schema
      .createTable('appservice_room_list')
      .addColumn('as_id', 'text', (c) => c.notNull())
      .addColumn('network_id', 'text', (c) => c.notNull())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('appservice_room_list_pk', ['as_id', 'network_id', 'room_id'])
      .execute();
  },
};
