// URL previews on a real server over real sockets, both storage backends, against a small site on
// 127.0.0.1 (whitelisted as 127.0.0.1/32; the rest of the loopback range stays blocked): Open
// Graph pages whose og:image becomes an mxc URI that downloads, title-only and latin1 pages, a
// direct image, a redirect chain, redirects to blocked addresses, blocked hosts, a page over
// max_spider_size (with and without Content-Length), a page that never answers, errors from the
// site, bad parameters, the URL blacklist, the cache; and the endpoint unknown when previews are off.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import sharp from 'sharp';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const MAX_SPIDER = 1024 * 1024;

interface Site {
  readonly server: Server;
  readonly base: string;
  readonly port: number;
  readonly hits: Map<string, number>;
}

async function startSite(png: Buffer): Promise<Site> {
  const hits = new Map<string, number>();
  const html = (body: string, type = 'text/html; charset=utf-8') => ({ type, body: Buffer.from(body, 'utf8') });
  const pages: Record<string, { type: string; body: Buffer; encoding?: string }> = {
    '/og.html': html(
      '<!doctype html><html><head><title>Not this</title>' +
        '<meta property="og:title" content="Caf&eacute; &amp; ☕ Open Graph">' +
        '<meta property="og:description" content="A page with every tag">' +
        '<meta property="og:site_name" content="Test site">' +
        '<meta property="og:type" content="article">' +
        '<meta property="og:image" content="/img/cup.png">' +
        '<meta property="og:image:width" content="9999">' +
        '</head><body><p>ignored</p></body></html>',
    ),
    '/title.html': html(
      '<html><head><title>\n  Just a   title  </title><script>var s = "<title>nope</title>";</script></head>' +
        '<body><!-- <p>hidden</p> --><p>First <b>paragraph</b>.</p><p>Second.</p><img src="small.gif" width="5" height="5"></body></html>',
    ),
    // latin1 as the page says (the header says nothing of its charset).
    '/latin1-meta.html': { type: 'text/html', body: Buffer.from('<html><head><meta charset="iso-8859-1"><title>Caf\u00e9 cr\u00e8me</title></head></html>', 'latin1') },
    // latin1 as the header says.
    '/latin1-header.html': { type: 'text/html; charset=ISO-8859-1', body: Buffer.from('<html><head><title>Na\u00efve r\u00e9sum\u00e9</title></head></html>', 'latin1') },
    '/gzip.html': { type: 'text/html', body: gzipSync(Buffer.from('<title>Compressed</title>')), encoding: 'gzip' },
    '/img/cup.png': { type: 'image/png', body: png },
    '/photo.png': { type: 'image/png', body: png },
    '/broken-image.html': html('<meta property="og:title" content="Broken image"><meta property="og:image" content="/missing.png">'),
    '/blocked-image.html': html('<meta property="og:title" content="Blocked image"><meta property="og:image" content="http://10.1.2.3/x.png">'),
    '/doc.pdf': { type: 'application/pdf', body: Buffer.from('%PDF-1.4') },
    '/counted.html': html('<title>Counted</title>'),
    '/big.html': html(`<title>Big</title>${'x'.repeat(MAX_SPIDER + 10)}`),
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const redirect = /^\/redirect\/(\d+)$/.exec(path);
    if (redirect !== null) {
      const n = Number(redirect[1]);
      res.writeHead(n === 1 ? 302 : 301, { location: n === 1 ? '/og.html' : `/redirect/${n - 1}` }).end();
      return;
    }
    if (path === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
    if (path === '/to-metadata') return void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    if (path === '/to-loopback') return void res.writeHead(307, { location: `http://127.0.0.2:${port}/og.html` }).end();
    if (path === '/to-file') return void res.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (path === '/slow') return; // never answers
    if (path === '/big-chunked.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 'y');
      let sent = 0;
      const more = () => {
        while (sent < MAX_SPIDER * 4) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('error', () => undefined);
      more();
      return;
    }
    const page = pages[path];
    if (page === undefined) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    res.writeHead(200, { 'content-type': page.type, 'content-length': page.body.length, ...(page.encoding ? { 'content-encoding': page.encoding } : {}) });
    res.end(page.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, base: `http://127.0.0.1:${port}`, port, hits };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`URL previews (${backend})`, { skip }, () => {
    let hs: TestServer;
    let site: Site;
    let alice: TestUser;
    let png: Buffer;

    const preview = async (url: string | undefined, path = '/_chat/client/v1/media/preview_url', extra = '') => {
      const q = url === undefined ? '' : `?url=${encodeURIComponent(url)}`;
      const res = await fetch(`${hs.baseUrl}${path}${q}${extra}`, { headers: hs.auth(alice) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const refused = (r: { status: number; body: Record<string, unknown> }, status: number, errcode: string) => {
      assert.deepEqual([r.status, r.body['errcode']], [status, errcode], JSON.stringify(r.body));
    };
    const download = async (uri: unknown) => {
      const m = /^mxc:\/\/localhost\/([A-Za-z0-9_-]+)$/.exec(String(uri));
      assert.ok(m, `an mxc URI of this server: ${String(uri)}`);
      const res = await fetch(`${hs.baseUrl}/_chat/client/v1/media/download/localhost/${m[1]}`, { headers: hs.auth(alice) });
      assert.equal(res.status, 200);
      return Buffer.from(await res.arrayBuffer());
    };

    before(async () => {
      png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c04020' } }).png().toBuffer();
      site = await startSite(png);
      hs = await startTestServer({
        backend,
        config: {
          media_api: {
            url_preview: {
              enabled: true,
              ip_range_whitelist: ['127.0.0.1/32'],
              url_blacklist: [{ netloc: '*.blocked.example' }, { netloc: '127.0.0.1:*', path: '^/private' }],
              max_spider_size: '1mb',
              timeout: '1s',
            },
          },
        },
      });
      alice = await hs.registerUser('alice', 'alice-pw');
    });
    after(async () => {
      await hs?.close();
      site?.server.closeAllConnections();
      await new Promise((resolve) => site?.server.close(resolve));
    });

    test('Open Graph tags, entities decoded; og:image fetched, kept as an mxc URI that downloads, with its real size', async () => {
      const r = await preview(`${site.base}/og.html`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const { 'og:image': image, ...rest } = r.body;
      assert.deepEqual(rest, {
        'og:title': 'Café & ☕ Open Graph',
        'og:description': 'A page with every tag',
        'og:site_name': 'Test site',
        'og:type': 'article',
        'og:image:type': 'image/png',
        'og:image:width': 64,
        'og:image:height': 48,
        'matrix:image:size': png.length,
      });
      assert.ok((await download(image)).equals(png));
    });

    test('the legacy paths answer the same', async () => {
      for (const path of ['/_chat/media/v3/preview_url', '/_matrix/media/v3/preview_url', '/_matrix/client/v1/media/preview_url']) {
        const r = await preview(`${site.base}/og.html`, path);
        assert.equal(r.status, 200, path);
        assert.equal(r.body['og:title'], 'Café & ☕ Open Graph', path);
      }
    });

    test('a page with only a title: the title, folded, and the first paragraphs; scripts and comments are not read', async () => {
      const r = await preview(`${site.base}/title.html`);
      assert.equal(r.status, 200);
      // The only image is 5x5: no better one, so it stands; it cannot be fetched, so it goes.
      assert.deepEqual(r.body, { 'og:title': 'Just a title', 'og:description': 'First paragraph.\n\nSecond.' });
    });

    test('latin1 pages, by <meta charset> and by Content-Type; a gzipped page', async () => {
      assert.deepEqual((await preview(`${site.base}/latin1-meta.html`)).body, { 'og:title': 'Café crème' });
      assert.deepEqual((await preview(`${site.base}/latin1-header.html`)).body, { 'og:title': 'Naïve résumé' });
      assert.deepEqual((await preview(`${site.base}/gzip.html`)).body, { 'og:title': 'Compressed' });
    });

    test('the URL of an image is its own preview; other types preview as {}', async () => {
      const r = await preview(`${site.base}/photo.png`);
      assert.equal(r.status, 200);
      assert.deepEqual({ ...r.body, 'og:image': '' }, { 'og:image': '', 'og:image:type': 'image/png', 'og:image:width': 64, 'og:image:height': 48, 'matrix:image:size': png.length });
      assert.ok((await download(r.body['og:image'])).equals(png));
      assert.deepEqual(await preview(`${site.base}/doc.pdf`), { status: 200, body: {} });
    });

    test('an image that cannot be had, or sits at a blocked address, is left out', async () => {
      assert.deepEqual((await preview(`${site.base}/broken-image.html`)).body, { 'og:title': 'Broken image' });
      assert.deepEqual((await preview(`${site.base}/blocked-image.html`)).body, { 'og:title': 'Blocked image' });
    });

    test('redirects are followed a few times, never to a blocked address or elsewhere than http(s)', async () => {
      const chain = await preview(`${site.base}/redirect/4`);
      assert.equal(chain.status, 200);
      assert.equal(chain.body['og:title'], 'Café & ☕ Open Graph');
      refused(await preview(`${site.base}/redirect/7`), 502, 'M_UNKNOWN');
      refused(await preview(`${site.base}/loop`), 502, 'M_UNKNOWN');
      const metadata = await preview(`${site.base}/to-metadata`);
      refused(metadata, 403, 'M_UNKNOWN');
      assert.equal(metadata.body['error'], 'IP address blocked');
      refused(await preview(`${site.base}/to-loopback`), 403, 'M_UNKNOWN');
      refused(await preview(`${site.base}/to-file`), 502, 'M_UNKNOWN');
      assert.equal(site.hits.get('/og.html') === undefined, false);
    });

    test('blocked addresses: the rest of loopback, IPv6 loopback, IPv4 written as IPv6, 0.0.0.0, private ranges', async () => {
      const before = site.hits.get('/og.html') ?? 0;
      for (const host of ['127.0.0.2', '[::1]', '[::ffff:127.0.0.2]', '[::ffff:7f00:2]', '0.0.0.0', '10.0.0.1', '192.168.1.1', '169.254.169.254', '[fd00::1]']) {
        const r = await preview(`http://${host}:${site.port}/og.html`);
        refused(r, 403, 'M_UNKNOWN');
        assert.equal(r.body['error'], 'IP address blocked', host);
      }
      assert.equal(site.hits.get('/og.html') ?? 0, before, 'no request reached the site');
    });

    test('max_spider_size: a larger page is refused, whether it says its length or not', async () => {
      refused(await preview(`${site.base}/big.html`), 502, 'M_TOO_LARGE');
      refused(await preview(`${site.base}/big-chunked.html`), 502, 'M_TOO_LARGE');
    });

    test('a site that does not answer in time, or answers an error: 502', async () => {
      const started = Date.now();
      const slow = await preview(`${site.base}/slow`);
      refused(slow, 502, 'M_UNKNOWN');
      assert.ok(Date.now() - started < 5000);
      refused(await preview(`${site.base}/nowhere.html`), 502, 'M_UNKNOWN');
      refused(await preview(`http://name.invalid:${site.port}/`), 502, 'M_UNKNOWN');
    });

    test('bad parameters', async () => {
      refused(await preview(undefined), 400, 'M_MISSING_PARAM');
      refused(await preview(''), 400, 'M_MISSING_PARAM');
      refused(await preview('not a url'), 400, 'M_INVALID_PARAM');
      refused(await preview('ftp://127.0.0.1/x'), 400, 'M_INVALID_PARAM');
      refused(await preview('file:///etc/passwd'), 400, 'M_INVALID_PARAM');
      refused(await preview(`${site.base}/og.html`, undefined, '&ts=yesterday'), 400, 'M_INVALID_PARAM');
      assert.equal((await preview(`${site.base}/og.html`, undefined, `&ts=${Date.now()}`)).status, 200);
      const anonymous = await fetch(`${hs.baseUrl}/_chat/client/v1/media/preview_url?url=${encodeURIComponent(`${site.base}/og.html`)}`);
      assert.equal(anonymous.status, 401);
    });

    test('the URL blacklist: 403 URL blocked, before anything is fetched', async () => {
      const r = await preview(`${site.base}/private/page.html`);
      refused(r, 403, 'M_UNKNOWN');
      assert.equal(r.body['error'], 'URL blocked');
      refused(await preview('https://www.blocked.example/'), 403, 'M_UNKNOWN');
      assert.equal(site.hits.get('/private/page.html'), undefined);
    });

    test('previews are kept: a second request does not fetch again; requests at once share the fetch', async () => {
      const all = await Promise.all([1, 2, 3].map(() => preview(`${site.base}/counted.html`)));
      for (const r of all) assert.deepEqual(r.body, { 'og:title': 'Counted' });
      await preview(`${site.base}/counted.html`);
      assert.equal(site.hits.get('/counted.html'), 1);
    });
  });

  describe(`URL previews off (${backend})`, { skip }, () => {
    let hs: TestServer;
    before(async () => {
      hs = await startTestServer({ backend });
    });
    after(async () => {
      await hs?.close();
    });

    test('the endpoint is unknown: 404 M_UNRECOGNIZED, as Synapse with previews off', async () => {
      const alice = await hs.registerUser('alice', 'alice-pw');
      for (const path of ['/_chat/client/v1/media/preview_url', '/_chat/media/v3/preview_url']) {
        const res = await fetch(`${hs.baseUrl}${path}?url=${encodeURIComponent('http://127.0.0.1/')}`, { headers: hs.auth(alice) });
        assert.equal(res.status, 404, path);
        assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_UNRECOGNIZED');
      }
    });
  });
}
