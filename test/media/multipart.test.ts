// The federation media API's multipart/mixed bodies: what multipartBody writes, readMultipartFile
// reads back byte for byte, however the stream is cut (one byte at a time, at random, with the
// boundary split across chunks); bodies that are not multipart, or end early, are refused.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { boundaryOf, multipartBody, newBoundary, readMultipartFile } from '../../src/media/multipart.js';

async function bytesOf(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

/** `data` as a stream cut into pieces of the sizes `sizes` gives. */
function cut(data: Buffer, sizes: () => number): AsyncIterable<Buffer> {
  return (async function* () {
    for (let i = 0; i < data.length; ) {
      const n = Math.max(1, sizes());
      yield data.subarray(i, i + n);
      i += n;
    }
  })();
}

test('what is written is read back, however the stream is cut', async () => {
  for (const file of [Buffer.alloc(0), Buffer.from('x'), randomBytes(20_000), Buffer.from(`\r\n--not-the-boundary\r\n`)]) {
    const boundary = newBoundary();
    const body = await bytesOf(multipartBody(boundary, { 'Content-Type': 'image/png', 'Content-Disposition': "inline; filename*=utf-8''a.png" }, Readable.from([file])));
    for (const sizes of [() => 1, () => 7, () => Math.floor(Math.random() * 5000), () => body.length]) {
      const part = await readMultipartFile(cut(body, sizes), boundary);
      assert.equal(part.headers['content-type'], 'image/png');
      assert.equal(part.headers['content-disposition'], "inline; filename*=utf-8''a.png");
      assert.ok((await bytesOf(part.body)).equals(file));
    }
  }
});

test('the boundary is read from the content type, quoted or not', () => {
  assert.equal(boundaryOf('multipart/mixed; boundary=abc123'), 'abc123');
  assert.equal(boundaryOf('multipart/mixed; boundary="a b"'), 'a b');
  assert.equal(boundaryOf('application/json'), undefined);
  assert.equal(boundaryOf(undefined), undefined);
});

test('bodies that are not multipart or end early are refused', async () => {
  await assert.rejects(readMultipartFile(cut(Buffer.from('{"errcode":"M_UNKNOWN"}'), () => 10), 'b'));
  const boundary = 'xyz';
  const truncated = Buffer.from(`--xyz\r\nContent-Type: application/json\r\n\r\n{}\r\n--xyz\r\nContent-Type: text/plain\r\n\r\nhalf a fi`);
  const part = await readMultipartFile(cut(truncated, () => 3), boundary);
  await assert.rejects(bytesOf(part.body), /ended early/);
});
