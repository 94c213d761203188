// Other servers' signing keys (federation/key-ring.ts): one row per (server, key id), with the
// signed key response it came from, so that the notary API can serve it with its original
// signatures and events can be checked without asking the server again while the key is valid.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const serverKeys: HearthMigration = {
  name: '011-server-keys',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('server_keys')
      .addColumn('server_name', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('valid_until_ts', 'bigint', (c) => c.notNull())
      .addColumn('expired_ts', 'bigint')
      .addColumn('fetched_at', 'bigint', (c) => c.notNull())
      .addColumn('key_json', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('server_keys_pkey', ['server_name', 'key_id'])
      .execute();
  },
};
