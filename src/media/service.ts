// The media repository: uploads (at once, or to an id made first with `/create`), downloads and
// thumbnails of this server's media. Rows in `media` and `media_thumbnails` (storage/media), bytes
// in files (files.ts), thumbnails made with sharp (thumbnailer.ts): the configured sizes of an
// uploaded image are made after the upload answers, any other size on request (when
// `dynamic_thumbnails`), each kept once made. Quarantined media is never served.
// Other servers' media is fetched from its origin once (through `remote`, the federation media
// API) and kept under remote_content, with the same size limit; thumbnails of it are made here.

import type { Kysely } from 'kysely';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { HearthError } from '../protocol/errors.js';
import {
  completeMedia,
  countPendingMedia,
  deleteMediaRows,
  insertMedia,
  insertThumbnail,
  localMediaBefore,
  mediaIdsOfUser,
  pageOfUserMedia,
  selectMedia,
  selectThumbnails,
  setQuarantined,
  type MediaOrder,
  type MediaRow,
  type ThumbnailRow,
} from '../storage/media/media.js';
import { eventJsonsMentioningMedia } from '../storage/rooms/events.js';
import type { Schema } from '../storage/schema.js';
import { isValidMediaId, MediaFiles, newMediaId } from './files.js';
import { THUMBNAILABLE, Thumbnailer, type ThumbnailMethod, type ThumbnailRequest } from './thumbnailer.js';

/** How long an id made by `/create` waits for its upload (as Synapse). */
export const UNUSED_EXPIRES_MS = 24 * 60 * 60_000;
/** How long a download of media not yet uploaded waits by default, and at most. */
export const DEFAULT_WAIT_MS = 20_000;
export const MAX_WAIT_MS = 120_000;
const WAIT_STEP_MS = 250;

export interface MediaServiceOptions {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly basePath: string;
  /** Largest upload in bytes; 0: no limit. */
  readonly maxUploadBytes: number;
  /** Ids made by `/create` and not uploaded to, per user, at once (media_api.max_pending_uploads). */
  readonly maxPendingUploads: number;
  readonly dynamicThumbnails: boolean;
  readonly maxThumbnailGenerators: number;
  readonly thumbnailSizes: readonly { readonly width: number; readonly height: number; readonly method: ThumbnailMethod }[];
  readonly log: { warn(message: string, details?: object): void };
  /** Other servers' media; without it (federation off), asking for it is 404. */
  readonly remote?: RemoteMediaSource;
  readonly now?: () => number;
}

/** Fetches a piece of media from its origin server. */
export interface RemoteMediaSource {
  /** The file, streamed; 404 M_NOT_FOUND when the origin has none, 502 when it cannot be had. */
  fetch(origin: string, mediaId: string, timeoutMs: number): Promise<{ readonly contentType?: string; readonly fileName?: string; readonly body: Readable }>;
}

export interface UploadInfo {
  readonly contentType: string | undefined;
  readonly fileName: string | undefined;
  /** The request's Content-Length, when it gave one. */
  readonly contentLength: number | undefined;
}

/** A file to send. */
export interface MediaFile {
  readonly path: string;
  readonly size: number;
  readonly contentType: string;
  readonly uploadName: string | null;
}

export class MediaService {
  private readonly files: MediaFiles;
  private readonly thumbnailer: Thumbnailer;
  private readonly now: () => number;
  /** Thumbnails being made, by file: requests for the same one share the work. */
  private readonly making = new Map<string, Promise<ThumbnailRow>>();
  /** Other servers' media being fetched: requests for the same one share the fetch. */
  private readonly fetching = new Map<string, Promise<MediaRow>>();
  /** Background work (configured thumbnails after an upload), awaited by close(). */
  private readonly background = new Set<Promise<void>>();

  constructor(private readonly options: MediaServiceOptions) {
    this.files = new MediaFiles(options.basePath);
    this.thumbnailer = new Thumbnailer(options.maxThumbnailGenerators);
    this.now = options.now ?? Date.now;
  }

  /** POST /upload: stores the body and answers its mxc URI. */
  async upload(userId: string, body: Readable, info: UploadInfo): Promise<string> {
    this.refuseLength(info.contentLength);
    const written = await this.files.write(body, this.options.maxUploadBytes);
    const mediaId = newMediaId();
    const now = this.now();
    const contentType = info.contentType ?? 'application/octet-stream';
    try {
      await this.files.commit(written.tempPath, this.files.contentPath(this.options.serverName, mediaId, true));
      await insertMedia(this.options.db, {
        origin: this.options.serverName,
        media_id: mediaId,
        user_id: userId,
        content_type: contentType,
        upload_name: info.fileName ?? null,
        size: written.size,
        sha256: written.sha256,
        created_ts: now,
        uploaded_ts: now,
        unused_expires_ts: null,
        quarantined_by: null,
      });
    } catch (err) {
      await this.files.discard(written.tempPath);
      throw err;
    }
    this.afterUpload(mediaId, contentType);
    return `mxc://${this.options.serverName}/${mediaId}`;
  }

  /** POST /media/v1/create: an id to upload to later; 429 with too many waiting. */
  async create(userId: string): Promise<{ content_uri: string; unused_expires_at: number }> {
    const now = this.now();
    if ((await countPendingMedia(this.options.db, userId, now)) >= this.options.maxPendingUploads) {
      throw new HearthError(429, 'M_LIMIT_EXCEEDED', 'Too many uploads waiting: upload to the ones made first', { retry_after_ms: 60_000 });
    }
    const mediaId = newMediaId();
    const expires = now + UNUSED_EXPIRES_MS;
    await insertMedia(this.options.db, {
      origin: this.options.serverName,
      media_id: mediaId,
      user_id: userId,
      content_type: null,
      upload_name: null,
      size: null,
      sha256: null,
      created_ts: now,
      uploaded_ts: null,
      unused_expires_ts: expires,
      quarantined_by: null,
    });
    return { content_uri: `mxc://${this.options.serverName}/${mediaId}`, unused_expires_at: expires };
  }

  /**
   * PUT /upload/{serverName}/{mediaId}: the upload to an id made by `/create`. 403 when it is
   * not the user's, 404 when unknown or expired, 409 M_CANNOT_OVERWRITE_MEDIA when uploaded already.
   */
  async uploadTo(userId: string, serverName: string, mediaId: string, body: Readable, info: UploadInfo): Promise<void> {
    if (serverName !== this.options.serverName) throw HearthError.forbidden('Media can only be uploaded to this server');
    const row = await this.row(serverName, mediaId);
    if (row === undefined) throw HearthError.notFound('Unknown media');
    if (row.user_id !== userId) throw HearthError.forbidden('This media id was made by another user');
    if (row.size !== null) throw new HearthError(409, 'M_CANNOT_OVERWRITE_MEDIA', 'Media has already been uploaded to this id');
    if (row.unused_expires_ts !== null && row.unused_expires_ts <= this.now()) throw HearthError.notFound('This media id has expired');
    this.refuseLength(info.contentLength);
    const written = await this.files.write(body, this.options.maxUploadBytes);
    const contentType = info.contentType ?? 'application/octet-stream';
    const finalPath = this.files.contentPath(serverName, mediaId, true);
    // Claimed first: of two uploads at once, one wins and the other's file is dropped.
    const claimed = await completeMedia(this.options.db, serverName, mediaId, userId, {
      content_type: contentType,
      upload_name: info.fileName ?? null,
      size: written.size,
      sha256: written.sha256,
      uploaded_ts: this.now(),
    });
    if (!claimed) {
      await this.files.discard(written.tempPath);
      throw new HearthError(409, 'M_CANNOT_OVERWRITE_MEDIA', 'Media has already been uploaded to this id');
    }
    await this.files.commit(written.tempPath, finalPath);
    this.afterUpload(mediaId, contentType);
  }

  /**
   * The file of `mxc://serverName/mediaId`, waiting up to `waitMs` for an upload not yet made (504
   * M_NOT_YET_UPLOADED after); 404 when unknown or quarantined, or for another server's media not
   * kept here when `allowRemote` is false; 502 when its origin cannot give it.
   */
  async download(serverName: string, mediaId: string, waitMs = DEFAULT_WAIT_MS, allowRemote = true): Promise<MediaFile> {
    const row = await this.uploaded(serverName, mediaId, waitMs, allowRemote);
    const path = this.files.contentPath(serverName, mediaId, this.isLocal(serverName));
    return { path, size: row.size!, contentType: row.content_type ?? 'application/octet-stream', uploadName: row.upload_name };
  }

  /** A thumbnail of the media, as close to the request as the rules allow. */
  async thumbnail(serverName: string, mediaId: string, req: ThumbnailRequest, waitMs = DEFAULT_WAIT_MS, allowRemote = true): Promise<MediaFile> {
    const row = await this.uploaded(serverName, mediaId, waitMs, allowRemote);
    const contentType = row.content_type ?? 'application/octet-stream';
    if (!THUMBNAILABLE.has(contentType)) throw new HearthError(400, 'M_UNKNOWN', `Cannot make a thumbnail of ${contentType}`);
    const target = this.options.dynamicThumbnails ? req : { ...req, ...this.closestConfigured(req) };
    const kept = (await selectThumbnails(this.options.db, serverName, mediaId)).find(
      (t) => t.width === target.width && t.height === target.height && t.method === target.method && t.animated === (target.animated ? 1 : 0),
    );
    const made = kept ?? (await this.makeThumbnail(row, target));
    return {
      path: this.files.thumbnailPath(serverName, mediaId, this.isLocal(serverName), thumbnailName(made)),
      size: made.size,
      contentType: made.content_type,
      uploadName: null,
    };
  }

  // Administration: quarantine (never served again, until lifted), deletion, listings.

  /** Quarantines one piece of media (or lifts it with `by` null); unknown media is left as it is. */
  async quarantine(serverName: string, mediaId: string, by: string | null): Promise<void> {
    await setQuarantined(this.options.db, [{ origin: serverName, mediaId }], by);
  }

  /** Quarantines the media a room's events refer to; answers how many were newly quarantined. */
  async quarantineRoom(roomId: string, by: string): Promise<number> {
    const { local, remote } = await this.mediaInRoom(roomId);
    return setQuarantined(this.options.db, [...local, ...remote].map(parseMxc).filter((k) => k !== undefined), by);
  }

  /** Quarantines a user's uploads. */
  async quarantineUser(userId: string, by: string): Promise<number> {
    const ids = await mediaIdsOfUser(this.options.db, this.options.serverName, userId);
    return setQuarantined(this.options.db, ids.map((mediaId) => ({ origin: this.options.serverName, mediaId })), by);
  }

  /** The mxc URIs of a room's events (`url`, `info.thumbnail_url`), this server's and others'. */
  async mediaInRoom(roomId: string): Promise<{ local: string[]; remote: string[] }> {
    const found = new Set<string>();
    for (const json of await eventJsonsMentioningMedia(this.options.db, roomId)) {
      const content = (JSON.parse(json) as { content?: unknown }).content;
      if (typeof content !== 'object' || content === null) continue;
      const c = content as { url?: unknown; info?: { thumbnail_url?: unknown } };
      for (const uri of [c.url, c.info?.thumbnail_url]) if (typeof uri === 'string' && parseMxc(uri) !== undefined) found.add(uri);
    }
    const local: string[] = [];
    const remote: string[] = [];
    for (const uri of found) (parseMxc(uri)!.origin === this.options.serverName ? local : remote).push(uri);
    return { local, remote };
  }

  /** A page of a user's uploads, as the admin API lists them. */
  async userMedia(userId: string, page: { from: number; limit: number; orderBy: MediaOrder; dir: 'f' | 'b' }): Promise<{ media: object[]; total: number }> {
    const { rows, total } = await pageOfUserMedia(this.options.db, this.options.serverName, userId, page);
    return { media: rows.map(mediaInfo), total };
  }

  /** What is known of a piece of this server's media; 404 when none. */
  async info(serverName: string, mediaId: string): Promise<object> {
    const row = await this.row(serverName, mediaId);
    if (row === undefined) throw HearthError.notFound('Unknown media');
    return mediaInfo(row);
  }

  /** Deletes a piece of this server's media, its thumbnails and files; 404 when unknown, 400 for another server's. */
  async delete(serverName: string, mediaId: string): Promise<void> {
    if (serverName !== this.options.serverName) throw HearthError.invalidParam('Only media of this server can be deleted');
    if ((await this.row(serverName, mediaId)) === undefined) throw HearthError.notFound('Unknown media');
    await this.remove(mediaId);
  }

  /** Deletes a user's uploads; answers their ids. */
  async deleteUserMedia(userId: string): Promise<string[]> {
    const ids = await mediaIdsOfUser(this.options.db, this.options.serverName, userId);
    for (const id of ids) await this.remove(id);
    return ids;
  }

  /** Deletes this server's media uploaded before `beforeTs` and larger than `sizeGt` bytes; answers their ids. */
  async deleteBefore(beforeTs: number, sizeGt: number): Promise<string[]> {
    const ids = await localMediaBefore(this.options.db, this.options.serverName, beforeTs, sizeGt);
    for (const id of ids) await this.remove(id);
    return ids;
  }

  private async remove(mediaId: string): Promise<void> {
    const origin = this.options.serverName;
    // Thumbnails still being made after an upload would come back after the deletion.
    await this.close();
    // The rows first: once they are gone nothing serves the files, which go next.
    await deleteMediaRows(this.options.db, origin, mediaId);
    await rm(this.files.contentPath(origin, mediaId, true), { force: true });
    await rm(dirname(this.files.thumbnailPath(origin, mediaId, true, 'x')), { recursive: true, force: true });
  }

  /** Waits for the configured thumbnails being made (for a clean stop). */
  async close(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  private refuseLength(contentLength: number | undefined): void {
    const max = this.options.maxUploadBytes;
    if (max > 0 && contentLength !== undefined && contentLength > max) throw HearthError.tooLarge(`Upload is larger than the ${max} bytes allowed`);
  }

  private async row(serverName: string, mediaId: string): Promise<MediaRow | undefined> {
    if (!isValidMediaId(mediaId)) return undefined;
    return selectMedia(this.options.db, serverName, mediaId);
  }

  private isLocal(serverName: string): boolean {
    return serverName === this.options.serverName;
  }

  /** The media's row once uploaded (fetched first, for another server's). */
  private async uploaded(serverName: string, mediaId: string, waitMs: number, allowRemote = true): Promise<MediaRow> {
    if (!this.isLocal(serverName)) return this.fetched(serverName, mediaId, waitMs, allowRemote);
    const deadline = this.now() + Math.min(Math.max(waitMs, 0), MAX_WAIT_MS);
    for (;;) {
      const row = await this.row(serverName, mediaId);
      if (row === undefined || row.quarantined_by !== null) throw HearthError.notFound('Media not found');
      if (row.size !== null) return row;
      if (row.unused_expires_ts !== null && row.unused_expires_ts <= this.now()) throw HearthError.notFound('Media not found');
      if (this.now() >= deadline) throw new HearthError(504, 'M_NOT_YET_UPLOADED', 'The media has not been uploaded yet');
      await new Promise((r) => setTimeout(r, Math.min(WAIT_STEP_MS, Math.max(1, deadline - this.now()))));
    }
  }

  /** Another server's media as kept here, fetched from its origin the first time. */
  private async fetched(origin: string, mediaId: string, waitMs: number, allowRemote: boolean): Promise<MediaRow> {
    if (!isValidMediaId(mediaId) || !/^[A-Za-z0-9.:[\]-]{1,255}$/.test(origin)) throw HearthError.notFound('Media not found');
    const kept = await selectMedia(this.options.db, origin, mediaId);
    if (kept !== undefined) {
      if (kept.quarantined_by !== null || kept.size === null) throw HearthError.notFound('Media not found');
      return kept;
    }
    const remote = this.options.remote;
    if (remote === undefined || !allowRemote) throw HearthError.notFound('Media not found');
    const key = `${origin}/${mediaId}`;
    let pending = this.fetching.get(key);
    if (pending === undefined) {
      pending = this.fetch(remote, origin, mediaId, waitMs).finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return pending;
  }

  private async fetch(remote: RemoteMediaSource, origin: string, mediaId: string, waitMs: number): Promise<MediaRow> {
    // The origin may itself wait for an upload; it is given that long and a little more.
    const got = await remote.fetch(origin, mediaId, Math.min(Math.max(waitMs, 0), MAX_WAIT_MS) + 10_000);
    let written;
    try {
      written = await this.files.write(got.body, this.options.maxUploadBytes);
    } catch (err) {
      if (err instanceof HearthError && err.status === 413) throw new HearthError(502, 'M_TOO_LARGE', `The media at ${origin} is larger than this server accepts`);
      throw new HearthError(502, 'M_UNKNOWN', `The media could not be fetched from ${origin}`);
    }
    const now = this.now();
    const row: MediaRow = {
      origin,
      media_id: mediaId,
      user_id: null,
      content_type: got.contentType ?? 'application/octet-stream',
      upload_name: got.fileName ?? null,
      size: written.size,
      sha256: written.sha256,
      created_ts: now,
      uploaded_ts: now,
      unused_expires_ts: null,
      quarantined_by: null,
    };
    try {
      await this.files.commit(written.tempPath, this.files.contentPath(origin, mediaId, false));
      await insertMedia(this.options.db, row);
    } catch (err) {
      await this.files.discard(written.tempPath);
      // Fetched meanwhile by another process sharing the database: theirs stands.
      const other = await selectMedia(this.options.db, origin, mediaId);
      if (other !== undefined && other.size !== null) return other;
      throw err;
    }
    return row;
  }

  /** Of the configured sizes with the method asked, the smallest at least as large as asked, else the largest. */
  private closestConfigured(req: ThumbnailRequest): { width: number; height: number; method: ThumbnailMethod } {
    const sizes = this.options.thumbnailSizes.filter((s) => s.method === req.method);
    const pool = sizes.length > 0 ? sizes : this.options.thumbnailSizes;
    if (pool.length === 0) return { width: req.width, height: req.height, method: req.method };
    const byArea = [...pool].sort((a, b) => a.width * a.height - b.width * b.height);
    return byArea.find((s) => s.width >= req.width && s.height >= req.height) ?? byArea[byArea.length - 1]!;
  }

  private makeThumbnail(row: MediaRow, req: ThumbnailRequest): Promise<ThumbnailRow> {
    const key = `${row.origin}/${row.media_id}/${req.width}x${req.height}-${req.method}-${req.animated ? 'a' : 's'}`;
    let pending = this.making.get(key);
    if (pending === undefined) {
      pending = this.render(row, req).finally(() => this.making.delete(key));
      this.making.set(key, pending);
    }
    return pending;
  }

  private async render(row: MediaRow, req: ThumbnailRequest): Promise<ThumbnailRow> {
    const local = this.isLocal(row.origin);
    const input = this.files.contentPath(row.origin, row.media_id, local);
    const made = await this.thumbnailer.make(input, row.content_type ?? '', req);
    const thumb: ThumbnailRow = {
      origin: row.origin,
      media_id: row.media_id,
      width: req.width,
      height: req.height,
      method: req.method,
      animated: req.animated ? 1 : 0,
      content_type: made.contentType,
      size: made.data.length,
    };
    await this.files.writeBytes(this.files.thumbnailPath(row.origin, row.media_id, local, thumbnailName(thumb)), made.data);
    await insertThumbnail(this.options.db, thumb);
    return thumb;
  }

  /** The configured thumbnails of an uploaded image, made in the background. */
  private afterUpload(mediaId: string, contentType: string): void {
    if (!THUMBNAILABLE.has(contentType) || this.options.thumbnailSizes.length === 0) return;
    const work = (async () => {
      const row = await selectMedia(this.options.db, this.options.serverName, mediaId);
      if (row === undefined) return;
      for (const size of this.options.thumbnailSizes) {
        await this.makeThumbnail(row, { ...size, animated: false }).catch((err: unknown) => {
          this.options.log.warn('making a thumbnail failed', { mediaId, size, err: err instanceof Error ? err.message : String(err) });
        });
      }
    })();
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }
}

/** A thumbnail's file name: what it was asked as (its type follows from the media's). */
function thumbnailName(t: Pick<ThumbnailRow, 'width' | 'height' | 'method' | 'animated'>): string {
  return `${t.width}-${t.height}-${t.method}${t.animated ? '-animated' : ''}`;
}

/** The server and id of `mxc://server/id`, or undefined for anything else. */
export function parseMxc(uri: string): { origin: string; mediaId: string } | undefined {
  const m = /^mxc:\/\/([^/]+)\/([A-Za-z0-9_-]+)$/.exec(uri);
  return m === null ? undefined : { origin: m[1]!, mediaId: m[2]! };
}

/** A media row as the admin API shows it (Synapse's field names). */
function mediaInfo(row: MediaRow): object {
  return {
    media_id: row.media_id,
    media_type: row.content_type,
    media_length: row.size,
    upload_name: row.upload_name,
    created_ts: row.created_ts,
    last_access_ts: row.uploaded_ts ?? row.created_ts,
    quarantined_by: row.quarantined_by,
    safe_from_quarantine: false,
    user_id: row.user_id,
  };
}
