// Thumbnails on a real server, both storage backends: PNG, JPEG, GIF (animated or not) and WebP
// uploaded through the media API, thumbnailed by crop and by scale (never enlarged), JPEG kept as
// JPEG, an animated GIF kept animated when asked; the configured sizes made after the upload; an
// image over the pixel limit refused; without dynamic thumbnails the nearest configured size.

import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import sharp, { type Metadata } from 'sharp';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const solid = (width: number, height: number, background: string) => sharp({ create: { width, height, channels: 4, background } });

async function images(): Promise<Record<string, { data: Buffer; type: string }>> {
  const frames = await Promise.all(['#f00', '#0f0', '#00f'].map((c) => solid(60, 40, c).png().toBuffer()));
  return {
    png: { data: await solid(200, 100, '#f00').png().toBuffer(), type: 'image/png' },
    jpeg: { data: await solid(300, 200, '#0a0').jpeg().toBuffer(), type: 'image/jpeg' },
    webp: { data: await solid(120, 120, '#00a').webp().toBuffer(), type: 'image/webp' },
    gif: { data: await sharp(frames, { join: { animated: true } }).gif({ delay: [100, 100, 100], loop: 0 }).toBuffer(), type: 'image/gif' },
    // 36 million pixels of one colour: a small file, too many pixels to thumbnail.
    huge: { data: await solid(6000, 6000, '#fff').png({ compressionLevel: 9 }).toBuffer(), type: 'image/png' },
  };
}

async function uploadTo(hs: TestServer, user: TestUser, data: Buffer, type: string): Promise<string> {
  const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, { method: 'POST', headers: { ...hs.auth(user), 'content-type': type }, body: data });
  assert.equal(res.status, 200);
  return String(((await res.json()) as { content_uri: string }).content_uri).replace('mxc://localhost/', '');
}

async function thumb(hs: TestServer, user: TestUser, id: string, query: string): Promise<{ status: number; type: string | null; meta?: Metadata; errcode?: string }> {
  const res = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/thumbnail/localhost/${id}?${query}`, { headers: hs.auth(user) });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, type: res.headers.get('content-type'), errcode: (JSON.parse(body.toString()) as { errcode: string }).errcode };
  return { status: 200, type: res.headers.get('content-type'), meta: await sharp(body, { animated: true }).metadata() };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`thumbnails (${backend})`, { skip }, () => {
    let hs: TestServer;
    let alice: TestUser;
    const ids: Record<string, string> = {};

    before(async () => {
      hs = await startTestServer({ backend });
      alice = await hs.registerUser('alice', 'alice-password');
      for (const [name, image] of Object.entries(await images())) ids[name] = await uploadTo(hs, alice, image.data, image.type);
    });
    after(async () => {
      await hs?.close();
    });

    test('crop fills the box; scale fits inside it and never enlarges', async () => {
      const cropped = await thumb(hs, alice, ids['png']!, 'width=32&height=32&method=crop');
      assert.equal(cropped.type, 'image/png');
      assert.deepEqual([cropped.meta!.width, cropped.meta!.height], [32, 32]);
      const scaled = await thumb(hs, alice, ids['png']!, 'width=50&height=50&method=scale');
      assert.deepEqual([scaled.meta!.width, scaled.meta!.height], [50, 25]);
      const big = await thumb(hs, alice, ids['png']!, 'width=640&height=480&method=scale');
      assert.deepEqual([big.meta!.width, big.meta!.height], [200, 100]);
    });

    test('JPEG stays JPEG; WebP becomes PNG', async () => {
      const jpeg = await thumb(hs, alice, ids['jpeg']!, 'width=96&height=96&method=crop');
      assert.equal(jpeg.type, 'image/jpeg');
      assert.equal(jpeg.meta!.format, 'jpeg');
      assert.deepEqual([jpeg.meta!.width, jpeg.meta!.height], [96, 96]);
      const webp = await thumb(hs, alice, ids['webp']!, 'width=64&height=64&method=scale');
      assert.equal(webp.type, 'image/png');
      assert.deepEqual([webp.meta!.width, webp.meta!.height], [64, 64]);
    });

    test('an animated GIF stays animated when asked, and is a still otherwise', async () => {
      const moving = await thumb(hs, alice, ids['gif']!, 'width=30&height=20&method=scale&animated=true');
      assert.equal(moving.type, 'image/gif');
      assert.equal(moving.meta!.pages, 3);
      const still = await thumb(hs, alice, ids['gif']!, 'width=30&height=20&method=scale');
      assert.equal(still.type, 'image/png');
      assert.equal(still.meta!.pages ?? 1, 1);
    });

    test('the configured sizes are made after the upload', async () => {
      const dir = `${hs.config.media_api.base_path}/local_thumbnails/${ids['jpeg']!.slice(0, 2)}/${ids['jpeg']!.slice(2, 4)}/${ids['jpeg']!.slice(4)}`;
      const deadline = Date.now() + 10_000;
      const expected = ['32-32-crop', '640-480-scale', '96-96-crop'];
      while (Date.now() < deadline && !(existsSync(dir) && expected.every((f) => readdirSync(dir).includes(f)))) await new Promise((r) => setTimeout(r, 25));
      assert.deepEqual(readdirSync(dir).filter((f) => expected.includes(f)).sort(), expected);
    });

    test('refusals: too many pixels, not an image, bad or missing parameters, no token', async () => {
      const huge = await thumb(hs, alice, ids['huge']!, 'width=32&height=32&method=crop');
      assert.deepEqual([huge.status, huge.errcode], [413, 'M_TOO_LARGE']);
      const text = await uploadTo(hs, alice, Buffer.from('hello'), 'text/plain');
      const notImage = await thumb(hs, alice, text, 'width=32&height=32');
      assert.deepEqual([notImage.status, notImage.errcode], [400, 'M_UNKNOWN']);
      assert.deepEqual((await thumb(hs, alice, ids['png']!, 'height=32')).errcode, 'M_MISSING_PARAM');
      assert.deepEqual((await thumb(hs, alice, ids['png']!, 'width=0&height=32')).errcode, 'M_INVALID_PARAM');
      assert.deepEqual((await thumb(hs, alice, ids['png']!, 'width=32&height=32&method=stretch')).errcode, 'M_INVALID_PARAM');
      assert.deepEqual((await thumb(hs, alice, 'NoSuchMedia', 'width=32&height=32')).errcode, 'M_NOT_FOUND');
      const anonymous = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/thumbnail/localhost/${ids['png']!}?width=32&height=32`);
      assert.equal(anonymous.status, 401);
      // The legacy path needs none.
      const legacy = await fetch(`${hs.baseUrl}/_matrix/media/v3/thumbnail/localhost/${ids['png']!}?width=32&height=32&method=crop`);
      assert.equal(legacy.status, 200);
      assert.equal(legacy.headers.get('content-disposition'), 'inline');
      await legacy.arrayBuffer();
    });
  });
}

describe('thumbnails without dynamic sizes', () => {
  let hs: TestServer;
  let alice: TestUser;
  before(async () => {
    hs = await startTestServer({ config: { media_api: { dynamic_thumbnails: false } } });
    alice = await hs.registerUser('alice', 'alice-password');
  });
  after(async () => {
    await hs?.close();
  });

  test('a request gets the smallest configured size at least as large, else the largest', async () => {
    const id = await uploadTo(hs, alice, await solid(1000, 1000, '#123').png().toBuffer(), 'image/png');
    const small = await thumb(hs, alice, id, 'width=50&height=50&method=crop');
    assert.deepEqual([small.meta!.width, small.meta!.height], [96, 96]);
    const large = await thumb(hs, alice, id, 'width=900&height=900&method=scale');
    assert.deepEqual([large.meta!.width, large.meta!.height], [480, 480]);
  });
});
