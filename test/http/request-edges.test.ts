// Requests at the HTTP edge against a real server: heads too large for Node's parser, malformed
// requests, a request without Host, 405 with Allow, an access token given two ways at once, and
// the content type of every JSON reply.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { serverBackends, useTestServer } from '../support/server.js';

interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Writes `request` on a fresh socket, in chunks, and reads what comes back until the server closes. */
function rawRequest(baseUrl: string, request: string, chunkSize = 4096): Promise<RawReply> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    socket.on('data', (d) => received.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.on('connect', () => {
      for (let i = 0; i < request.length; i += chunkSize) socket.write(request.slice(i, i + chunkSize));
    });
  });
}

function assertJsonError(reply: RawReply, status: number, errcode: string, what: string): void {
  assert.equal(reply.status, status, `${what}: ${reply.status} ${reply.body}`);
  assert.equal(reply.headers['content-type'], 'application/json', what);
  assert.equal(reply.headers['access-control-allow-origin'], '*', what);
  assert.equal(Number(reply.headers['content-length']), Buffer.byteLength(reply.body), what);
  const body = JSON.parse(reply.body) as { errcode?: unknown; error?: unknown };
  assert.equal(body.errcode, errcode, what);
  assert.equal(typeof body.error, 'string', what);
}

for (const { backend, skip } of await serverBackends()) {
  describe(`HTTP edge cases on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let token: string;
    before(async () => {
      token = (await hs.registerUser('alice', 'alice-pw')).accessToken;
    });

    test('a URL over the parser limit: 431 M_TOO_LARGE as JSON with CORS headers', async () => {
      for (const length of [17_000, 100_000]) {
        const path = `/_matrix/client/v3/rooms/${'a'.repeat(length)}/state`;
        const reply = await rawRequest(hs.baseUrl, `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
        assertJsonError(reply, 431, 'M_TOO_LARGE', `URL of ${length}`);
      }
      // All in one write too, and through fetch.
      const oneWrite = await rawRequest(hs.baseUrl, `GET /_matrix/client/v3/${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 1 << 20);
      assertJsonError(oneWrite, 431, 'M_TOO_LARGE', 'one write');
      const res = await fetch(`${hs.baseUrl}/_matrix/client/v3/sync?filter=${'c'.repeat(20_000)}`);
      assert.equal(res.status, 431);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_TOO_LARGE');
    });

    test('headers over the parser limit: the same JSON error', async () => {
      const reply = await rawRequest(hs.baseUrl, `GET /_matrix/client/versions HTTP/1.1\r\nHost: x\r\nX-Big: ${'d'.repeat(20_000)}\r\n\r\n`);
      assertJsonError(reply, 431, 'M_TOO_LARGE', 'big header');
    });

    test('a request the parser cannot read: 400 M_UNKNOWN as JSON', async () => {
      assertJsonError(await rawRequest(hs.baseUrl, 'NOT A REQUEST\r\n\r\n'), 400, 'M_UNKNOWN', 'garbage');
      assertJsonError(await rawRequest(hs.baseUrl, 'GET / HTTP/1.1\r\nBad Header\r\n\r\n'), 400, 'M_UNKNOWN', 'bad header');
    });

    test('an HTTP/1.1 request without Host: 400 as JSON with CORS headers, and the connection closed', async () => {
      for (const path of ['/_matrix/client/versions', '/_matrix/client/v3/nowhere', '/health']) {
        // rawRequest resolves only once the server closes the connection.
        const reply = await rawRequest(hs.baseUrl, `GET ${path} HTTP/1.1\r\n\r\n`);
        assertJsonError(reply, 400, 'M_UNKNOWN', `${path} without Host`);
        assert.match(JSON.parse(reply.body).error, /Host/);
        assert.equal(reply.headers['connection'], 'close');
      }
      // HTTP/1.0 has no such rule.
      const old = await rawRequest(hs.baseUrl, 'GET /_matrix/client/versions HTTP/1.0\r\n\r\n');
      assert.equal(old.status, 200, old.body);
      assert.ok(Array.isArray(JSON.parse(old.body).versions));
    });

    test('every JSON reply is typed application/json, without a charset', async () => {
      const auth = { authorization: `Bearer ${token}` };
      const cases: [string, RequestInit, number][] = [
        ['/_matrix/client/versions', {}, 200],
        ['/_matrix/client/v3/account/whoami', { headers: auth }, 200],
        ['/_matrix/client/v3/account/whoami', {}, 401],
        ['/_matrix/client/v3/account/whoami', { method: 'HEAD', headers: auth }, 200],
        ['/_matrix/client/v3/nowhere', {}, 404],
        ['/_matrix/client/v3/createRoom', { headers: auth }, 405],
        ['/_matrix/client/v3/createRoom', { method: 'POST', headers: auth, body: '{not json' }, 400],
        ['/_matrix/client/v3/createRoom', { method: 'OPTIONS' }, 200],
        ['/_matrix/client/v3/rooms/%ZZ/state', { headers: auth }, 400],
        ['/.well-known/matrix/client', {}, 404],
      ];
      for (const [path, init, status] of cases) {
        const res = await fetch(hs.baseUrl + path, init);
        assert.equal(res.status, status, `${init.method ?? 'GET'} ${path}`);
        assert.equal(res.headers.get('content-type'), 'application/json', `${init.method ?? 'GET'} ${path}`);
        if (init.method !== 'HEAD') JSON.parse(await res.text());
      }
    });

    test('the server still answers normally afterwards', async () => {
      const res = await fetch(`${hs.baseUrl}/_matrix/client/versions`);
      assert.equal(res.status, 200);
    });

    test('405 lists the methods the path serves in Allow', async () => {
      const cases: [string, string, string][] = [
        // GET and PUT served: HEAD with GET, OPTIONS everywhere.
        ['POST', '/_matrix/client/v3/profile/%40alice%3Alocalhost/displayname', 'GET, HEAD, PUT, OPTIONS'],
        ['DELETE', '/_matrix/client/v3/profile/%40alice%3Alocalhost/displayname', 'GET, HEAD, PUT, OPTIONS'],
        ['GET', '/_matrix/client/v3/createRoom', 'POST, OPTIONS'],
        ['PATCH', '/_matrix/client/v3/account/whoami', 'GET, HEAD, OPTIONS'],
      ];
      for (const [method, path, allow] of cases) {
        const res = await fetch(hs.baseUrl + path, { method, headers: { authorization: `Bearer ${token}` } });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
        assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_UNRECOGNIZED');
      }
      // A served method has no Allow header.
      const ok = await fetch(`${hs.baseUrl}/_matrix/client/v3/account/whoami`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('allow'), null);
    });

    test('a token in both the Authorization header and the query: 401 M_MISSING_TOKEN', async () => {
      const whoami = `${hs.baseUrl}/_matrix/client/v3/account/whoami`;
      const mixed = await fetch(`${whoami}?access_token=${token}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(mixed.status, 401);
      assert.equal(mixed.headers.get('access-control-allow-origin'), '*');
      const body = (await mixed.json()) as { errcode: string; error: string };
      assert.equal(body.errcode, 'M_MISSING_TOKEN');
      assert.match(body.error, /Mixing/);
      // Each way alone still works.
      assert.equal((await fetch(`${whoami}?access_token=${token}`)).status, 200);
      assert.equal((await fetch(whoami, { headers: { authorization: `Bearer ${token}` } })).status, 200);
      // Routes that read no token ignore the mix.
      const versions = await fetch(`${hs.baseUrl}/_matrix/client/versions?access_token=${token}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(versions.status, 200);
    });
  });
}
