// Where media bytes live: files under media_api.base_path, one per piece of media and one per
// thumbnail, in folders fanned out by the id's first characters so that no folder grows huge.
// An upload is streamed to a temporary file while it is hashed and counted, and moved into place
// only when whole: a refused or broken upload leaves nothing behind.

import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HearthError } from '../protocol/errors.js';

export interface WrittenFile {
  readonly tempPath: string;
  readonly size: number;
  /** Hex SHA-256 of the bytes. */
  readonly sha256: string;
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A new media id: 24 letters (about 136 bits). */
export function newMediaId(): string {
  const bytes = randomBytes(24);
  let id = '';
  for (const b of bytes) id += ID_ALPHABET[b % ID_ALPHABET.length];
  return id;
}

/** Media ids this server makes and accepts: letters, digits, `_` and `-` (the spec's safe set). */
export function isValidMediaId(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,255}$/.test(id);
}

export class MediaFiles {
  constructor(private readonly basePath: string) {}

  /** The file of a piece of media. */
  contentPath(origin: string, mediaId: string, local: boolean): string {
    return local ? join(this.basePath, 'local_content', ...fanOut(mediaId)) : join(this.basePath, 'remote_content', encodeURIComponent(origin), ...fanOut(mediaId));
  }

  /** The file of one of its thumbnails. */
  thumbnailPath(origin: string, mediaId: string, local: boolean, name: string): string {
    const dir = local ? join(this.basePath, 'local_thumbnails', ...fanOut(mediaId)) : join(this.basePath, 'remote_thumbnails', encodeURIComponent(origin), ...fanOut(mediaId));
    return join(dir, name);
  }

  /**
   * Streams `body` into a temporary file, hashing and counting it; past `maxBytes` (0: no limit)
   * it stops reading and throws 413 M_TOO_LARGE. Any failure (the client gone mid-upload
   * included) removes the temporary file.
   */
  async write(body: Readable, maxBytes: number): Promise<WrittenFile> {
    const tempDir = join(this.basePath, 'tmp');
    await mkdir(tempDir, { recursive: true });
    const tempPath = join(tempDir, `${Date.now()}-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (maxBytes > 0 && size > maxBytes) {
          done(HearthError.tooLarge(`Upload is larger than the ${maxBytes} bytes allowed`));
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(body, meter, createWriteStream(tempPath, { flags: 'wx' }));
    } catch (err) {
      await rm(tempPath, { force: true });
      if (err instanceof HearthError) throw err;
      throw new HearthError(400, 'M_UNKNOWN', 'The upload did not complete');
    }
    return { tempPath, size, sha256: hash.digest('hex') };
  }

  /** Moves a written file into place. */
  async commit(tempPath: string, finalPath: string): Promise<void> {
    await mkdir(join(finalPath, '..'), { recursive: true });
    await rename(tempPath, finalPath);
  }

  /** Writes bytes (a thumbnail) into place, through a temporary file. */
  async writeBytes(finalPath: string, data: Buffer): Promise<void> {
    const written = await this.write(Readable.from([data]), 0);
    await this.commit(written.tempPath, finalPath);
  }

  async discard(tempPath: string): Promise<void> {
    await rm(tempPath, { force: true });
  }
}

function fanOut(mediaId: string): string[] {
  return mediaId.length > 4 ? [mediaId.slice(0, 2), mediaId.slice(2, 4), mediaId.slice(4)] : [mediaId];
}
