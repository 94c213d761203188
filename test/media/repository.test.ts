// The media repository on a real server over real sockets, both storage backends: uploads of
// 1 byte, 10 MB and 50 MB + 1 (refused from its Content-Length before it is sent, and when sent
// chunked, with nothing left on disk), an upload cut off mid-way leaves nothing, concurrent uploads;
// downloads under both the legacy and the authenticated paths with the safe headers and byte
// ranges; ids made first with /create and uploaded to later; every refusal's errcode.

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const MAX = 52_428_800;

/** Every file under a folder (none when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name));
}

for (const { backend, skip } of await serverBackends()) {
  describe(`media repository (${backend})`, { skip }, () => {
    let hs: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    let mediaDir: string;

    const upload = async (data: Uint8Array, type: string | undefined, fileName?: string, user = alice) => {
      const headers: Record<string, string> = { ...hs.auth(user) };
      if (type !== undefined) headers['content-type'] = type;
      const q = fileName !== undefined ? `?filename=${encodeURIComponent(fileName)}` : '';
      const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload${q}`, { method: 'POST', headers, body: data });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const mediaIdOf = (uri: unknown) => {
      const m = /^mxc:\/\/([^/]+)\/([A-Za-z0-9_-]+)$/.exec(String(uri));
      assert.ok(m, `an mxc URI: ${String(uri)}`);
      assert.equal(m[1], 'localhost');
      return m[2]!;
    };

    before(async () => {
      hs = await startTestServer({ backend });
      mediaDir = hs.config.media_api.base_path;
      alice = await hs.registerUser('alice', 'alice-password');
      bob = await hs.registerUser('bob', 'bob-password');
    });
    after(async () => {
      await hs?.close();
    });

    test('the upload limit is told under every path', async () => {
      for (const path of ['/_matrix/media/v3/config', '/_matrix/client/v1/media/config']) {
        const res = await fetch(`${hs.baseUrl}${path}`, { headers: hs.auth(alice) });
        assert.deepEqual(await res.json(), { 'm.upload.size': MAX }, path);
      }
    });

    test('one byte: uploaded, downloaded under both paths with safe headers', async () => {
      const up = await upload(Buffer.from('x'), 'text/plain', 'note.txt');
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const id = mediaIdOf(up.body['content_uri']);
      for (const [path, headers] of [
        [`/_matrix/media/v3/download/localhost/${id}`, {}],
        [`/_chat/media/r0/download/localhost/${id}`, {}],
        [`/_matrix/client/v1/media/download/localhost/${id}`, hs.auth(bob)],
      ] as const) {
        const res = await fetch(`${hs.baseUrl}${path}`, { headers });
        assert.equal(res.status, 200, path);
        assert.equal(await res.text(), 'x');
        assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
        assert.equal(res.headers.get('content-disposition'), "inline; filename*=utf-8''note.txt");
        assert.match(res.headers.get('content-security-policy') ?? '', /^sandbox; default-src 'none'/);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(res.headers.get('content-length'), '1');
      }
      // The authenticated path takes a token.
      const anonymous = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/download/localhost/${id}`);
      assert.equal(anonymous.status, 401);
      // A file name in the path names the download.
      const named = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/download/localhost/${id}/other%20name.txt`, { headers: hs.auth(alice) });
      assert.equal(named.headers.get('content-disposition'), "inline; filename*=utf-8''other%20name.txt");
    });

    test('types a browser would run are offered as attachments, never shown in place', async () => {
      const up = await upload(Buffer.from('<script>alert(1)</script>'), 'text/html', 'page.html');
      const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/download/localhost/${mediaIdOf(up.body['content_uri'])}`);
      assert.equal(res.headers.get('content-disposition'), "attachment; filename*=utf-8''page.html");
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      // No content type given: bytes.
      const bare = await upload(Buffer.from([1, 2, 3]), undefined);
      const got = await fetch(`${hs.baseUrl}/_matrix/media/v3/download/localhost/${mediaIdOf(bare.body['content_uri'])}`);
      assert.equal(got.headers.get('content-type'), 'application/octet-stream');
      assert.equal(got.headers.get('content-disposition'), 'attachment');
    });

    test('10 MB: the same bytes come back, whole and by ranges', async () => {
      const data = randomBytes(10 * 1024 * 1024);
      const up = await upload(data, 'application/octet-stream');
      assert.equal(up.status, 200);
      const url = `${hs.baseUrl}/_matrix/client/v1/media/download/localhost/${mediaIdOf(up.body['content_uri'])}`;
      const whole = Buffer.from(await (await fetch(url, { headers: hs.auth(alice) })).arrayBuffer());
      assert.equal(createHash('sha256').update(whole).digest('hex'), createHash('sha256').update(data).digest('hex'));
      const part = await fetch(url, { headers: { ...hs.auth(alice), range: 'bytes=100-199' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 100-199/${data.length}`);
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), data.subarray(100, 200));
      const tail = await fetch(url, { headers: { ...hs.auth(alice), range: 'bytes=-10' } });
      assert.deepEqual(Buffer.from(await tail.arrayBuffer()), data.subarray(data.length - 10));
      const beyond = await fetch(url, { headers: { ...hs.auth(alice), range: `bytes=${data.length}-` } });
      assert.equal(beyond.status, 416);
      assert.equal(beyond.headers.get('content-range'), `bytes */${data.length}`);
      await beyond.arrayBuffer();
    });

    test('50 MB + 1 is refused from its Content-Length before it is sent, and when sent chunked; nothing is left', async () => {
      // Only a megabyte is written: the answer comes before the rest would be.
      const refused = await new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        const req = httpRequest(`${hs.baseUrl}/_matrix/media/v3/upload`, {
          method: 'POST',
          headers: { ...hs.auth(alice), 'content-type': 'application/octet-stream', 'content-length': String(MAX + 1) },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.write(Buffer.alloc(1024 * 1024));
      });
      assert.equal(refused.status, 413);
      assert.equal(JSON.parse(refused.body).errcode, 'M_TOO_LARGE');
      assert.equal(refused.connection, 'close');
      // Chunked, with no length to go by: counted, and refused past the limit.
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          const chunk = new Uint8Array(1024 * 1024);
          for (let i = 0; i < 50; i++) controller.enqueue(chunk);
          controller.enqueue(new Uint8Array(1));
          controller.close();
        },
      });
      const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, {
        method: 'POST',
        headers: { ...hs.auth(alice), 'content-type': 'application/octet-stream' },
        body: chunked,
        duplex: 'half',
      } as RequestInit).catch((err: unknown) => err);
      if (res instanceof Response) {
        assert.equal(res.status, 413);
        assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_TOO_LARGE');
      }
      assert.deepEqual(filesUnder(join(mediaDir, 'tmp')), []);
      // Exactly the limit is taken.
      const exact = await upload(new Uint8Array(MAX), 'application/octet-stream');
      assert.equal(exact.status, 200);
    });

    test('an upload cut off mid-way leaves no file and no media', async () => {
      const before = filesUnder(join(mediaDir, 'local_content')).length;
      await new Promise<void>((resolve) => {
        const req = httpRequest(`${hs.baseUrl}/_matrix/media/v3/upload`, {
          method: 'POST',
          headers: { ...hs.auth(alice), 'content-type': 'application/octet-stream', 'content-length': String(4 * 1024 * 1024) },
        });
        req.on('error', () => resolve());
        req.write(Buffer.alloc(1024 * 1024), () => {
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 100);
        });
      });
      const deadline = Date.now() + 5000;
      while (filesUnder(join(mediaDir, 'tmp')).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(filesUnder(join(mediaDir, 'tmp')), []);
      assert.equal(filesUnder(join(mediaDir, 'local_content')).length, before);
    });

    test('concurrent uploads each get their own id and bytes', async () => {
      const datas = Array.from({ length: 10 }, () => randomBytes(200_000));
      const ups = await Promise.all(datas.map((d) => upload(d, 'application/octet-stream')));
      const ids = ups.map((u) => mediaIdOf(u.body['content_uri']));
      assert.equal(new Set(ids).size, 10);
      for (const [i, id] of ids.entries()) {
        const got = Buffer.from(await (await fetch(`${hs.baseUrl}/_matrix/media/v3/download/localhost/${id}`)).arrayBuffer());
        assert.ok(got.equals(datas[i]!), `upload ${i}`);
      }
    });

    test('an id made with /create: not yet uploaded (504, or waited for), uploaded once by its maker', async () => {
      const made = await fetch(`${hs.baseUrl}/_matrix/media/v1/create`, { method: 'POST', headers: hs.auth(alice) });
      assert.equal(made.status, 200);
      const body = (await made.json()) as { content_uri: string; unused_expires_at: number };
      const id = mediaIdOf(body.content_uri);
      assert.ok(body.unused_expires_at > Date.now());
      const early = await fetch(`${hs.baseUrl}/_matrix/media/v3/download/localhost/${id}?timeout_ms=0`);
      assert.equal(early.status, 504);
      assert.equal(((await early.json()) as { errcode: string }).errcode, 'M_NOT_YET_UPLOADED');
      // A download waits for the upload.
      const waiting = fetch(`${hs.baseUrl}/_matrix/client/v1/media/download/localhost/${id}?timeout_ms=10000`, { headers: hs.auth(bob) });
      const byBob = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload/localhost/${id}`, { method: 'PUT', headers: { ...hs.auth(bob), 'content-type': 'text/plain' }, body: 'no' });
      assert.equal(byBob.status, 403);
      const put = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload/localhost/${id}?filename=later.txt`, { method: 'PUT', headers: { ...hs.auth(alice), 'content-type': 'text/plain' }, body: 'later' });
      assert.equal(put.status, 200, await put.clone().text());
      assert.deepEqual(await put.json(), {});
      const got = await waiting;
      assert.equal(got.status, 200);
      assert.equal(await got.text(), 'later');
      const again = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload/localhost/${id}`, { method: 'PUT', headers: { ...hs.auth(alice), 'content-type': 'text/plain' }, body: 'again' });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as { errcode: string }).errcode, 'M_CANNOT_OVERWRITE_MEDIA');
      const unknown = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload/localhost/NoSuchMediaId`, { method: 'PUT', headers: hs.auth(alice), body: 'x' });
      assert.equal(unknown.status, 404);
      const elsewhere = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload/other.test/${id}`, { method: 'PUT', headers: hs.auth(alice), body: 'x' });
      assert.equal(elsewhere.status, 403);
    });

    test('at most 5 ids wait for their upload per user', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await fetch(`${hs.baseUrl}/_matrix/media/v1/create`, { method: 'POST', headers: hs.auth(bob) });
        statuses.push(r.status);
        const body = (await r.json()) as { errcode?: string };
        if (r.status === 429) assert.equal(body.errcode, 'M_LIMIT_EXCEEDED');
      }
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    });

    test('unknown media and bad ids are 404, a server that cannot be reached 502; uploads need a token', async () => {
      const unreachable = await fetch(`${hs.baseUrl}/_matrix/media/v3/download/other.invalid/abc`);
      assert.equal(unreachable.status, 502);
      assert.equal(((await unreachable.json()) as { errcode: string }).errcode, 'M_UNKNOWN');
      for (const path of ['/_matrix/media/v3/download/localhost/NoSuchMedia', '/_matrix/media/v3/download/other.invalid/abc?allow_remote=false', '/_matrix/media/v3/download/localhost/bad%24id']) {
        const res = await fetch(`${hs.baseUrl}${path}`);
        assert.equal(res.status, 404, path);
        assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_NOT_FOUND', path);
      }
      const res = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, { method: 'POST', body: 'x' });
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_MISSING_TOKEN');
    });
  });
}
