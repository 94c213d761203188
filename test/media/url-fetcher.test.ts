// The fetcher of URL previews against a server on 127.0.0.1, with host names resolved by the test:
// a name is resolved once per hop and the connection goes to the address checked (a second
// answer cannot rebind it); a name with any blocked address is refused; resolution failures, a
// body that trickles past the time limit, and the size limit on compressed bodies.

import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { HearthError } from '../../src/protocol/errors.js';
import { type ResolvedAddress, UrlFetcher } from '../../src/media/url-fetcher.js';

describe('the URL preview fetcher', () => {
  let port = 0;
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/trickle') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<title>');
      const timer = setInterval(() => res.write('.'), 100);
      res.once('close', () => clearInterval(timer));
      return;
    }
    if (req.url === '/bomb') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
      res.end(gzipSync(Buffer.alloc(5 * 1024 * 1024)));
      return;
    }
    if (req.url === '/hop') return void res.writeHead(302, { location: `http://second.test:${port}/page` }).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<title>ok</title>');
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const fetcher = (resolve: (host: string) => Promise<readonly ResolvedAddress[]>, timeoutMs = 5000) =>
    new UrlFetcher({ blacklist: ['127.0.0.0/8', '10.0.0.0/8'], whitelist: ['127.0.0.1/32'], maxBytes: 1024 * 1024, timeoutMs, userAgent: 'test', resolve });
  const refusal = (status: number, errcode: string) => (err: unknown) => err instanceof HearthError && err.status === status && err.errcode === errcode;

  test('a name is resolved once per hop and connected to at the address checked, whatever a later answer says', async () => {
    const asked: string[] = [];
    const f = fetcher(async (host) => {
      const again = asked.includes(host);
      asked.push(host);
      // The first answer for each name is the allowed address; a later one would be blocked.
      return [{ address: again ? '10.0.0.1' : '127.0.0.1', family: 4 }];
    });
    const got = await f.fetch(new URL(`http://first.test:${port}/hop`), 'text/html');
    assert.equal(got.url.href, `http://second.test:${port}/page`);
    assert.equal(got.body.toString(), '<title>ok</title>');
    assert.equal(got.mediaType, 'text/html');
    assert.deepEqual(asked, ['first.test', 'second.test']);
    assert.deepEqual(seen.slice(-2).map((h) => h.host), [`first.test:${port}`, `second.test:${port}`]);
    assert.equal(seen.at(-1)!['user-agent'], 'test');
  });

  test('a name with any blocked address is refused before connecting', async () => {
    const before = seen.length;
    const f = fetcher(async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]);
    await assert.rejects(f.fetch(new URL(`http://mixed.test:${port}/`), '*/*'), refusal(403, 'M_UNKNOWN'));
    const mapped = fetcher(async () => [{ address: '::ffff:10.0.0.1', family: 6 }]);
    await assert.rejects(mapped.fetch(new URL(`http://mapped.test:${port}/`), '*/*'), refusal(403, 'M_UNKNOWN'));
    assert.equal(seen.length, before);
  });

  test('a name that does not resolve: 502', async () => {
    await assert.rejects(fetcher(async () => []).fetch(new URL(`http://none.test:${port}/`), '*/*'), refusal(502, 'M_UNKNOWN'));
    await assert.rejects(
      fetcher(async () => {
        throw new Error('ENOTFOUND');
      }).fetch(new URL(`http://none.test:${port}/`), '*/*'),
      refusal(502, 'M_UNKNOWN'),
    );
  });

  test('a body that trickles past the time limit: 502', async () => {
    const started = Date.now();
    await assert.rejects(fetcher(async () => [{ address: '127.0.0.1', family: 4 }], 500).fetch(new URL(`http://127.0.0.1:${port}/trickle`), '*/*'), refusal(502, 'M_UNKNOWN'));
    assert.ok(Date.now() - started < 3000);
  });

  test('a compressed body is limited by its size once decompressed', async () => {
    await assert.rejects(fetcher(async () => []).fetch(new URL(`http://127.0.0.1:${port}/bomb`), '*/*'), refusal(502, 'M_TOO_LARGE'));
  });
});
