import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
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

describe('a request that arrives too slowly', () => {
  let hs: TestServer;
  let listeners: Listeners;
  const logged: Record<string, unknown>[] = [];
  before(async () => {
    hs = await startTestServer();
    // The test server's app on a listener of its own, whose bound on receiving a request is short.
    listeners = await Listeners.start(hs.server.app.routing, [{ host: '127.0.0.1', port: 0 }], {
      requestTimeoutMs: 400,
      log: { info: (fields) => void logged.push(fields as Record<string, unknown>) },
    });
  });
  after(async () => {
    await listeners?.close(0);
    await hs?.close();
  });

  /** Writes `head`, then one byte of body every 100 ms until the server closes the connection. */
  function trickle(head: string, bytes: string): Promise<{ text: string; writes: number }> {
    const { port } = listeners.bound[0]!;
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      let writes = 0;
      let timer: NodeJS.Timeout | undefined;
      socket.on('data', (d) => (text += d.toString('utf8')));
      socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ text, writes });
      });
      socket.on('connect', () => {
        socket.write(head);
        timer = setInterval(() => {
          if (socket.destroyed || socket.writableEnded) return;
          socket.write(bytes[writes % bytes.length]!);
          writes++;
          // A server that never cuts the connection fails the test instead of hanging it.
          if (writes > 300) socket.destroy(new Error('the server kept a trickling request open'));
        }, 100);
      });
    });
  }

  function assertJson408(text: string): void {
    const [head = '', body = ''] = text.split('\r\n\r\n', 2);
    assert.match(head, /^HTTP\/1\.1 408 /, text);
    assert.match(head, /\r\ncontent-type: application\/json\r\n/i);
    assert.match(head, /\r\naccess-control-allow-origin: \*\r\n/i);
    assert.match(head, /\r\nconnection: close\r\n/i);
    assert.deepEqual(JSON.parse(body), { errcode: 'M_UNKNOWN', error: 'Request not received in time' });
  }

  test('a body trickled a byte at a time gets a JSON 408 and the connection is closed', async () => {
    const user = await hs.registerUser('slow', 'slow-pw');
    const head =
      `PUT /_matrix/client/v3/user/${encodeURIComponent(user.userId)}/account_data/org.example.slow HTTP/1.1\r\n` +
      `Host: localhost\r\nAuthorization: Bearer ${user.accessToken}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const { text, writes } = await trickle(head, '{"a":"bbbbbbbbbbbbbbbbbbbbbb');
    assertJson408(text);
    assert.ok(writes < 300, `${writes} bytes written before the cut`);
    assert.ok(logged.some((l) => l['statusCode'] === 408 && l['method'] === 'PUT'), JSON.stringify(logged));
    // Nothing of the half-sent body was stored.
    const res = await fetch(`${hs.baseUrl}/_matrix/client/v3/user/${encodeURIComponent(user.userId)}/account_data/org.example.slow`, { headers: hs.auth(user) });
    assert.equal(res.status, 404);
  });

  test('headers trickled a byte at a time get the same answer', async () => {
    const { text } = await trickle('GET /_matrix/client/versions HTTP/1.1\r\nHost: localhost\r\n', 'X-Slow: aaaa\r\n');
    assertJson408(text);
  });

  test('the listener still serves requests sent in time', async () => {
    const res = await fetch(`${listeners.bound[0]!.url}/_matrix/client/versions`);
    assert.equal(res.status, 200);
  });
});
