// The multipart/mixed answers of the federation media API (`/federation/v1/media/download|
// thumbnail`): a first part of JSON metadata (`{}` today), then the file, either inline with its
// own Content-Type and Content-Disposition, or as a Location header to fetch it from. Both ways
// stream: the file part is never held whole in memory.

import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';

/** A boundary that cannot occur by chance in the file. */
export function newBoundary(): string {
  return randomBytes(16).toString('hex');
}

/** The body of a multipart/mixed answer carrying `file` with these headers. */
export function multipartBody(boundary: string, fileHeaders: Record<string, string>, file: Readable): Readable {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Type: application/json\r\n\r\n{}\r\n--${boundary}\r\n` +
      Object.entries(fileHeaders)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      '\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return Readable.from(
    (async function* () {
      yield head;
      for await (const chunk of file) yield chunk as Buffer;
      yield tail;
    })(),
  );
}

export interface MultipartFile {
  /** The file part's headers, names in lower case. */
  readonly headers: Record<string, string>;
  /** The file part's bytes (empty when it names a Location instead). */
  readonly body: Readable;
}

/** The boundary of a `multipart/mixed; boundary=...` content type, or undefined. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/mixed\b/i.test(contentType)) return undefined;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m === null ? undefined : (m[1] ?? m[2]);
}

/** Reads up to the file part of a multipart/mixed stream; throws when it is not one. */
export async function readMultipartFile(source: AsyncIterable<Buffer>, boundary: string): Promise<MultipartFile> {
  const reader = new ChunkReader(source[Symbol.asyncIterator]());
  const delimiter = Buffer.from(`--${boundary}`);
  await reader.until(delimiter, 64 * 1024);
  await reader.until(Buffer.from('\r\n'), 1024);
  await reader.until(Buffer.from('\r\n\r\n'), 16 * 1024); // the metadata part's headers
  await reader.until(Buffer.from(`\r\n--${boundary}`), 1024 * 1024); // its JSON
  await reader.until(Buffer.from('\r\n'), 1024);
  const headerText = (await reader.until(Buffer.from('\r\n\r\n'), 16 * 1024)).toString('utf8');
  const headers: Record<string, string> = {};
  for (const line of headerText.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const end = Buffer.from(`\r\n--${boundary}`);
  return { headers, body: Readable.from(reader.streamUntil(end)) };
}

/** Reads a chunked stream by delimiters, keeping only what it has not handed out. */
class ChunkReader {
  private buffer = Buffer.alloc(0);
  private done = false;

  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async more(): Promise<boolean> {
    if (this.done) return false;
    const next = await this.source.next();
    if (next.done) {
      this.done = true;
      return false;
    }
    this.buffer = this.buffer.length === 0 ? Buffer.from(next.value) : Buffer.concat([this.buffer, next.value]);
    return true;
  }

  /** The bytes before `delimiter` (which is consumed); throws past `limit` bytes or at the end. */
  async until(delimiter: Buffer, limit: number): Promise<Buffer> {
    for (;;) {
      const at = this.buffer.indexOf(delimiter);
      if (at >= 0) {
        const out = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + delimiter.length);
        return out;
      }
      if (this.buffer.length > limit) throw new Error('malformed multipart answer: a part is too long');
      if (!(await this.more())) throw new Error('malformed multipart answer: it ended early');
    }
  }

  /** Everything before `delimiter`, as it comes; throws when the stream ends first. */
  async *streamUntil(delimiter: Buffer): AsyncGenerator<Buffer> {
    for (;;) {
      const at = this.buffer.indexOf(delimiter);
      if (at >= 0) {
        if (at > 0) yield this.buffer.subarray(0, at);
        this.buffer = Buffer.alloc(0);
        return;
      }
      // All but what could be the start of the delimiter is file.
      const keep = delimiter.length - 1;
      if (this.buffer.length > keep) {
        yield this.buffer.subarray(0, this.buffer.length - keep);
        this.buffer = this.buffer.subarray(this.buffer.length - keep);
      }
      if (!(await this.more())) throw new Error('malformed multipart answer: the file part ended early');
    }
  }
}
