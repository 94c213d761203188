// When each server's membership of a room began: the events-stream position of the event that
// gave it its first joined member. The federation sender sends a server only this server's events
// from that point on: what came before is the room's history, which the server got with its
// join (or fetches). Rows written before this migration say 0 (every event, as before).

import { sql, type Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const joinedSince: HearthMigration = {
  name: '013-joined-since',
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('room_joined_servers')
      .addColumn('joined_since', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
      .execute();
  },
};
