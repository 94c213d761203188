// Queries of the media repository's tables (tables/media.ts).

import type { Kysely } from 'kysely';
import type { MediaTable, MediaThumbnailsTable } from '../tables/media.js';
import type { Schema } from '../schema.js';

export type MediaRow = MediaTable;
export type ThumbnailRow = MediaThumbnailsTable;

export async function insertMedia(db: Kysely<Schema>, row: MediaRow): Promise<void> {
  await db.insertInto('media').values(row).execute();
}

export async function selectMedia(db: Kysely<Schema>, origin: string, mediaId: string): Promise<MediaRow | undefined> {
  const row = await db.selectFrom('media').selectAll().where('origin', '=', origin).where('media_id', '=', mediaId).executeTakeFirst();
  return row === undefined ? undefined : normalise(row);
}

/**
 * Records the upload to an id made by `/create`: only while it is unused and unexpired, by the
 * user who made it; false otherwise (another upload was first).
 */
export async function completeMedia(
  db: Kysely<Schema>,
  origin: string,
  mediaId: string,
  userId: string,
  upload: Pick<MediaRow, 'content_type' | 'upload_name' | 'size' | 'sha256' | 'uploaded_ts'>,
): Promise<boolean> {
  const res = await db
    .updateTable('media')
    .set({ ...upload, unused_expires_ts: null })
    .where('origin', '=', origin)
    .where('media_id', '=', mediaId)
    .where('user_id', '=', userId)
    .where('size', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Ids a user made with `/create` and has not uploaded to yet, not expired. */
export async function countPendingMedia(db: Kysely<Schema>, userId: string, now: number): Promise<number> {
  const row = await db
    .selectFrom('media')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('size', 'is', null)
    .where('unused_expires_ts', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertThumbnail(db: Kysely<Schema>, row: ThumbnailRow): Promise<void> {
  await db
    .insertInto('media_thumbnails')
    .values(row)
    .onConflict((oc) => oc.columns(['origin', 'media_id', 'width', 'height', 'method', 'animated']).doUpdateSet({ content_type: row.content_type, size: row.size }))
    .execute();
}

export async function selectThumbnails(db: Kysely<Schema>, origin: string, mediaId: string): Promise<ThumbnailRow[]> {
  const rows = await db.selectFrom('media_thumbnails').selectAll().where('origin', '=', origin).where('media_id', '=', mediaId).execute();
  return rows.map((r) => ({ ...r, width: Number(r.width), height: Number(r.height), animated: Number(r.animated), size: Number(r.size) }));
}

function normalise(row: MediaRow): MediaRow {
  return {
    ...row,
    size: row.size === null ? null : Number(row.size),
    created_ts: Number(row.created_ts),
    uploaded_ts: row.uploaded_ts === null ? null : Number(row.uploaded_ts),
    unused_expires_ts: row.unused_expires_ts === null ? null : Number(row.unused_expires_ts),
  };
}
