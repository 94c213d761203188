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

/** Marks media quarantined by `by` (or lifts it with null); how many rows changed. */
export async function setQuarantined(db: Kysely<Schema>, keys: readonly { origin: string; mediaId: string }[], by: string | null): Promise<number> {
  let changed = 0;
  for (const { origin, mediaId } of keys) {
    const res = await db
      .updateTable('media')
      .set({ quarantined_by: by })
      .where('origin', '=', origin)
      .where('media_id', '=', mediaId)
      .where('quarantined_by', by === null ? 'is not' : 'is', null)
      .executeTakeFirst();
    changed += Number(res.numUpdatedRows);
  }
  return changed;
}

/** Ids of a user's uploads (this server's media). */
export async function mediaIdsOfUser(db: Kysely<Schema>, origin: string, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('media').select('media_id').where('origin', '=', origin).where('user_id', '=', userId).execute();
  return rows.map((r) => r.media_id);
}

export type MediaOrder = 'media_id' | 'upload_name' | 'created_ts' | 'media_length' | 'media_type' | 'quarantined_by';

const ORDER_COLUMNS: Record<MediaOrder, 'media_id' | 'upload_name' | 'created_ts' | 'size' | 'content_type' | 'quarantined_by'> = {
  media_id: 'media_id',
  upload_name: 'upload_name',
  created_ts: 'created_ts',
  media_length: 'size',
  media_type: 'content_type',
  quarantined_by: 'quarantined_by',
};

/** A page of a user's uploads, with how many there are in all. */
export async function pageOfUserMedia(
  db: Kysely<Schema>,
  origin: string,
  userId: string,
  page: { readonly from: number; readonly limit: number; readonly orderBy: MediaOrder; readonly dir: 'f' | 'b' },
): Promise<{ rows: MediaRow[]; total: number }> {
  const base = db.selectFrom('media').where('origin', '=', origin).where('user_id', '=', userId);
  const total = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const dir = page.dir === 'b' ? 'desc' : 'asc';
  const rows = await base
    .selectAll()
    .orderBy(ORDER_COLUMNS[page.orderBy], dir)
    .orderBy('media_id', dir)
    .offset(page.from)
    .limit(page.limit)
    .execute();
  return { rows: rows.map(normalise), total: Number(total.n) };
}

/** This server's uploads made before `beforeTs` and larger than `sizeGt` bytes. */
export async function localMediaBefore(db: Kysely<Schema>, origin: string, beforeTs: number, sizeGt: number): Promise<string[]> {
  const rows = await db
    .selectFrom('media')
    .select('media_id')
    .where('origin', '=', origin)
    .where('created_ts', '<', beforeTs)
    .where('size', '>', sizeGt)
    .execute();
  return rows.map((r) => r.media_id);
}

/** Forgets a piece of media and its thumbnails; true when it was there. */
export async function deleteMediaRows(db: Kysely<Schema>, origin: string, mediaId: string): Promise<boolean> {
  await db.deleteFrom('media_thumbnails').where('origin', '=', origin).where('media_id', '=', mediaId).execute();
  const res = await db.deleteFrom('media').where('origin', '=', origin).where('media_id', '=', mediaId).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
