// Pushers (POST /pushers/set), OpenID tokens for the federation userinfo check, and the user
// agent a device was last seen with (for whois).

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const pushersOpenid: HearthMigration = {
  name: '007-pushers-openid',
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('devices').addColumn('last_seen_user_agent', 'text').execute();

    // One pusher per user, app and pushkey; the device that set it takes it along when deleted.
    await db.schema
      .createTable('pushers')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('app_id', 'text', (c) => c.notNull())
      .addColumn('pushkey', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('app_display_name', 'text', (c) => c.notNull())
      .addColumn('device_display_name', 'text', (c) => c.notNull())
      .addColumn('profile_tag', 'text', (c) => c.notNull())
      .addColumn('lang', 'text', (c) => c.notNull())
      .addColumn('data_json', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text')
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('pushers_pk', ['user_id', 'app_id', 'pushkey'])
      .execute();
    // A new pusher replaces other users' pushers for the same app and pushkey.
    await db.schema.createIndex('pushers_app_pushkey').on('pushers').columns(['app_id', 'pushkey']).execute();

    await db.schema
      .createTable('openid_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('valid_until_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('openid_tokens_valid_until').on('openid_tokens').column('valid_until_ts').execute();
  },
};
