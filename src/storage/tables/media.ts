// The media repository (migration 018).

/** One piece of media: uploaded here (origin is this server) or, later, fetched from another server. */
export interface MediaTable {
  origin: string;
  media_id: string;
  /** Who uploaded it (this server's media). */
  user_id: string | null;
  content_type: string | null;
  /** The file name given at upload. */
  upload_name: string | null;
  /** Null while an id made by `/media/v1/create` waits for its upload. */
  size: number | null;
  /** Hex SHA-256 of the bytes. */
  sha256: string | null;
  created_ts: number;
  uploaded_ts: number | null;
  /** An id made by `/create` and not uploaded to by then is no longer accepted. */
  unused_expires_ts: number | null;
  /** The admin who quarantined it; quarantined media is never served. */
  quarantined_by: string | null;
}

/** A thumbnail of a piece of media, as a file beside it. */
export interface MediaThumbnailsTable {
  origin: string;
  media_id: string;
  width: number;
  height: number;
  method: string;
  /** 1 when it keeps the image's animation. */
  animated: number;
  content_type: string;
  size: number;
}

export interface MediaTables {
  media: MediaTable;
  media_thumbnails: MediaThumbnailsTable;
}
