// The media repository (see tables/media.ts): what was uploaded here, under which id, and the
// thumbnails made of it. The bytes themselves are files under media_api.base_path.

import type { Kysely } from 'kysely';
import type { HearthMigration } from './index.js';

export const media: HearthMigration = {
  name: '018-media',
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('media')
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('media_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      .addColumn('content_type', 'text')
      .addColumn('upload_name', 'text')
      .addColumn('size', 'bigint')
      .addColumn('sha256', 'text')
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addColumn('uploaded_ts', 'bigint')
      .addColumn('unused_expires_ts', 'bigint')
      .addColumn('quarantined_by', 'text')
      .addPrimaryKeyConstraint('media_pk', ['origin', 'media_id'])
      .execute();
    await db.schema.createIndex('media_by_user').on('media').columns(['user_id', 'created_ts']).execute();
    await db.schema
      .createTable('media_thumbnails')
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('media_id', 'text', (c) => c.notNull())
      .addColumn('width', 'integer', (c) => c.notNull())
      .addColumn('height', 'integer', (c) => c.notNull())
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('animated', 'integer', (c) => c.notNull())
      .addColumn('content_type', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('media_thumbnails_pk', ['origin', 'media_id', 'width', 'height', 'method', 'animated'])
      .execute();
  },
};
