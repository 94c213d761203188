import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Listeners } from '../../src/server/listeners.js';
import { type TestServer, startTestServer } from '../support/server.js';
import { type TestCertificate, httpsGet, makeSelfSignedCertificate } from './tls.js';

describe('a server with a plain and a TLS listener', () => {
  let dir: string;
  let cert: TestCertificate;
  let hs: TestServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-tls-'));
    cert = makeSelfSignedCertificate(dir);
    hs = await startTestServer({
      config: { listen: { https: '127.0.0.1:0', tls_cert: cert.certPath, tls_key: cert.keyPath } },
    });
  });
  after(async () => {
    await hs?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('both listeners are bound, on different ports', () => {
    const listeners = hs.server.listeners;
    assert.equal(listeners.length, 2);
    assert.deepEqual(listeners.map((l) => l.tls), [false, true]);
    assert.match(listeners[1]!.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(listeners[0]!.port, listeners[1]!.port);
  });

  test('the TLS listener serves client, key, well-known and health routes alike', async () => {
    const tls = hs.server.listeners.find((l) => l.tls)!;
    for (const path of ['/_chat/client/versions', '/_matrix/key/v2/server', '/health', '/.well-known/chat/client', '/_chat/client/v3/nothing']) {
      const [secure, plain] = await Promise.all([httpsGet(tls.url + path, cert.cert), fetch(hs.baseUrl + path)]);
      const plainBody = await plain.text();
      assert.equal(secure.status, plain.status, path);
      if (path === '/_matrix/key/v2/server') {
        assert.equal(JSON.parse(secure.body).server_name, JSON.parse(plainBody).server_name);
      } else {
        assert.equal(secure.body, plainBody, path);
      }
    }
  });

  test('the TLS listener does not speak plain HTTP', async () => {
    const tls = hs.server.listeners.find((l) => l.tls)!;
    await assert.rejects(fetch(`http://127.0.0.1:${tls.port}/health`));
  });
});

describe('listener failures', () => {
  test('a port in use fails the start, naming the address', async () => {
    const first = await startTestServer();
    try {
      const port = first.server.listeners[0]!.port;
      await assert.rejects(
        startTestServer({ config: { listen: { http: `127.0.0.1:${port}` } } }),
        new RegExp(`cannot listen on http://127\\.0\\.0\\.1:${port}: address already in use`),
      );
    } finally {
      await first.close();
    }
  });

  test('close() stops the listener and is safe to call twice', async () => {
    const hs = await startTestServer();
    assert.equal((await fetch(`${hs.baseUrl}/health`)).status, 200);
    await Promise.all([hs.close(), hs.close()]);
    await hs.close();
    await assert.rejects(fetch(`${hs.baseUrl}/health`));
  });
});

describe('Listeners.close', () => {
  test('lets a request in progress finish, refusing new connections meanwhile', async () => {
    let release!: () => void;
    const go = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const received = new Promise<void>((r) => (arrived = r));
    const listeners = await Listeners.start((_req, res) => {
      arrived();
      void go.then(() => res.end('done'));
    }, [{ host: '127.0.0.1', port: 0 }]);
    const url = listeners.bound[0]!.url;
    const inFlight = fetch(url);
    // Closing only once the server has the request: before that, it would be refused too.
    await received;
    let stopped = false;
    const closing = listeners.close(5000, () => (stopped = true));
    assert.equal(stopped, true);
    await assert.rejects(fetch(url));
    release();
    const res = await inFlight;
    assert.equal(await res.text(), 'done');
    // The finished request's connection is dropped at once, well before the grace period ends.
    const released = Date.now();
    await closing;
    assert.ok(Date.now() - released < 1000, `${Date.now() - released} ms`);
  });

  test('cuts a request that outlasts the grace period', async () => {
    let arrived!: () => void;
    const received = new Promise<void>((r) => (arrived = r));
    const listeners = await Listeners.start(() => arrived(), [{ host: '127.0.0.1', port: 0 }]);
    const inFlight = fetch(listeners.bound[0]!.url);
    inFlight.catch(() => undefined); // asserted below
    await received;
    const started = Date.now();
    await listeners.close(200);
    const took = Date.now() - started;
    assert.ok(took >= 150 && took < 2000, `${took} ms`);
    await assert.rejects(inFlight);
  });
});
