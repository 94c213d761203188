// Cross-signing and server-side key backup: each user's cross-signing keys and the signatures
// uploaded for keys, backup versions and the backed-up room keys. Device-list changes may now be
// meant for one user only (`only_for`: signatures made with a user-signing key are private to it).

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const crossSigningBackup: HearthMigration = {
  name: '006-cross-signing-backup',
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('device_list_changes').addColumn('only_for', 'text').execute();

    // One key per user and usage (master, self_signing, user_signing), as uploaded.
    await db.schema
      .createTable('cross_signing_keys')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('key_type', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('key_json', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('cross_signing_keys_pk', ['user_id', 'key_type'])
      .execute();

    // A signature by the signer's key `signing_key_id` over the target user's key `target_key_id`
    // (a device ID, or the public key of a master key).
    await db.schema
      .createTable('cross_signing_signatures')
      .addColumn('signer_user_id', 'text', (c) => c.notNull())
      .addColumn('signing_key_id', 'text', (c) => c.notNull())
      .addColumn('target_user_id', 'text', (c) => c.notNull())
      .addColumn('target_key_id', 'text', (c) => c.notNull())
      .addColumn('signature', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('cross_signing_signatures_pk', ['target_user_id', 'target_key_id', 'signer_user_id', 'signing_key_id'])
      .execute();
    // Replacing a signing key or deleting a device removes the signatures made with it.
    await db.schema
      .createIndex('cross_signing_signatures_signer')
      .on('cross_signing_signatures')
      .columns(['signer_user_id', 'signing_key_id'])
      .execute();

    // Versions count up per user and are never reused; a deleted version keeps its row.
    await db.schema
      .createTable('backup_versions')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .addColumn('algorithm', 'text', (c) => c.notNull())
      .addColumn('auth_data', 'text', (c) => c.notNull())
      .addColumn('etag', 'bigint', (c) => c.notNull())
      .addColumn('deleted', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('backup_versions_pk', ['user_id', 'version'])
      .execute();

    await db.schema
      .createTable('backup_keys')
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('first_message_index', 'bigint', (c) => c.notNull())
      .addColumn('forwarded_count', 'bigint', (c) => c.notNull())
      .addColumn('is_verified', 'integer', (c) => c.notNull())
      .addColumn('session_data', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('backup_keys_pk', ['user_id', 'version', 'room_id', 'session_id'])
      .execute();
  },
};
