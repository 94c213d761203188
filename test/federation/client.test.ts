// The outbound federation client against real HTTPS servers on 127.0.0.2 and 127.0.0.3, a real DNS
// server and a test CA: where requests go (Host, SNI), certificate checks, the Authorization header,
// the fallback from the chat naming to the matrix one, and time limits that leave other
// destinations alone.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as dns } from 'node:dns';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { type AuthorizeInput, FederationClient, FederationError, type FederationFailure, ServerResolver } from '../../src/federation/client.js';
import { type TestDnsServer, startDnsServer } from '../support/dns-server.js';
import { type TestCa, type TestHttpsServer, createTestCa, listenHttps } from '../support/test-ca.js';

interface Seen {
  readonly peer: 'A' | 'B';
  readonly method: string;
  readonly url: string;
  readonly host: string;
  readonly sni: string | false;
  readonly authorization: string | undefined;
  readonly body: string;
}

let ca: TestCa;
let dnsServer: TestDnsServer;
let dnsClient: dns.Resolver;
let peerA: TestHttpsServer; // 127.0.0.2
let peerB: TestHttpsServer; // 127.0.0.3, same port
let port: number;
const seen: Seen[] = [];
const hanging = new Set<ServerResponse>();

function reply(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** Names (without port) whose server knows only the `/_matrix` root, and how it refuses `/_chat`. */
const MATRIX_ONLY: Record<string, (res: ServerResponse) => void> = {
  'mx.test': (res) => reply(res, 404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
  'mx2.test': (res) => reply(res, 404, 'Not Found', 'text/plain'),
  'mx3.test': (res) => reply(res, 404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }),
};

function handler(peer: 'A' | 'B') {
  return (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const host = String(req.headers.host);
      const hostname = host.replace(/:\d+$/, '');
      const url = req.url ?? '';
      seen.push({
        peer, method: req.method ?? '', url, host, body,
        // Node sets it on server sockets; its typings do not say so.
        sni: (req.socket as TLSSocket & { servername: string | false }).servername,
        authorization: req.headers.authorization,
      });
      if (url === '/.well-known/matrix/server' && hostname === 'mxwk.test') return reply(res, 200, { 'm.server': `mx3.test:${port}` });
      if (url === '/.well-known/chat/server' && hostname === 'wk.test') return reply(res, 200, { 'm.server': `fed.test:${port}` });
      const refuse = MATRIX_ONLY[hostname];
      if (refuse && url.startsWith('/_chat/')) return refuse(res);
      if (url.endsWith('/test/hang')) return void hanging.add(res);
      if (url.endsWith('/test/html')) return reply(res, 200, '<html></html>', 'text/html');
      if (url.endsWith('/test/big')) return reply(res, 200, { padding: 'x'.repeat(300 * 1024) });
      if (url.endsWith('/test/error')) return reply(res, 500, { errcode: 'M_UNKNOWN', error: 'boom' });
      if (/^\/_(chat|matrix)\/(federation|key)\//.test(url)) return reply(res, 200, { peer, url, host, body });
      reply(res, 404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    });
  };
}

/** Requests seen by the peers after `mark` (an index into `seen`). */
const since = (mark: number) => seen.slice(mark);

const calls: AuthorizeInput[] = [];
function authorize(input: AuthorizeInput): string {
  calls.push(input);
  return `${input.scheme} origin="origin.test",destination="${input.destination}",key="ed25519:k",sig="sig${calls.length}"`;
}

function client(options: Partial<ConstructorParameters<typeof FederationClient>[0]> = {}): FederationClient {
  return new FederationClient({
    authorize,
    resolver: new ServerResolver({ dns: dnsClient, ca: ca.cert, wellKnownPort: port, wellKnownTimeoutMs: 1000 }),
    ca: ca.cert,
    timeoutMs: 3000,
    ...options,
  });
}

async function failure(promise: Promise<unknown>, reason: FederationFailure, pattern: RegExp): Promise<FederationError> {
  let caught: unknown;
  await promise.catch((err: unknown) => (caught = err));
  assert.ok(caught instanceof FederationError, `expected a FederationError, got ${String(caught)}`);
  assert.equal(caught.reason, reason, caught.message);
  assert.match(caught.message, pattern);
  return caught;
}

const clients: FederationClient[] = [];
function track(c: FederationClient): FederationClient {
  clients.push(c);
  return c;
}

before(async () => {
  ca = createTestCa();
  dnsServer = await startDnsServer();
  for (const name of ['hs1.test', 'wk.test', 'fed.test', 'box.test', 'mx.test', 'mx2.test', 'mx3.test', 'mxwk.test']) {
    dnsServer.set(name, { a: ['127.0.0.2'] });
  }
  dnsServer.set('hs3.test', { a: ['127.0.0.3'] });
  dnsServer.set('hs4.test', { a: ['127.0.0.3'] });
  dnsClient = new dns.Resolver({ timeout: 1000, tries: 1 });
  dnsClient.setServers([dnsServer.address]);
  const certA = ca.issue(['hs1.test', 'wk.test', 'fed.test', 'srvname.test', 'mx.test', 'mx2.test', 'mx3.test', 'mxwk.test', '127.0.0.2']);
  // B's certificate holds neither hs3.test nor its address: requests for those must fail the check.
  const certB = ca.issue(['hs4.test']);
  // Both peers on one port, so the one well-known port of the resolver reaches either.
  for (let attempt = 0; ; attempt++) {
    peerA = await listenHttps('127.0.0.2', 0, certA, handler('A'));
    port = peerA.port;
    try {
      peerB = await listenHttps('127.0.0.3', port, certB, handler('B'));
      break;
    } catch (err) {
      await peerA.close();
      if (attempt === 4) throw err;
    }
  }
  dnsServer.set('_chat._tcp.srvname.test', { srv: [{ port, target: 'box.test' }] });
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const res of hanging) res.destroy();
  await Promise.all([peerA.close(), peerB.close()]);
  await dnsServer.close();
});

describe('where requests go', () => {
  test('an IP literal: no SNI, Host is the server name, the certificate holds the address', async () => {
    const c = track(client());
    const mark = seen.length;
    const res = await c.request({ destination: `127.0.0.2:${port}`, method: 'GET', path: '/federation/v1/version' });
    assert.equal(res.status, 200);
    assert.deepEqual(since(mark).map((s) => [s.peer, s.url, s.host, s.sni]), [
      ['A', '/_chat/federation/v1/version', `127.0.0.2:${port}`, false],
    ]);
  });

  test('a hostname with a port: SNI is the hostname, Host the server name', async () => {
    const c = track(client());
    const mark = seen.length;
    await c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/federation/v1/version' });
    assert.deepEqual(since(mark).map((s) => [s.peer, s.host, s.sni]), [['A', `hs1.test:${port}`, 'hs1.test']]);
  });

  test('well-known delegation: SNI and Host name the delegated server', async () => {
    const c = track(client());
    const mark = seen.length;
    const res = await c.request({ destination: 'wk.test', method: 'GET', path: '/federation/v1/version' });
    assert.equal(res.status, 200);
    assert.deepEqual(since(mark).map((s) => [s.url, s.host, s.sni]), [
      ['/.well-known/chat/server', `wk.test:${port}`, 'wk.test'],
      ['/_chat/federation/v1/version', `fed.test:${port}`, 'fed.test'],
    ]);
  });

  test('SRV: connects to the target, SNI and Host stay the server name', async () => {
    const c = track(client());
    const mark = seen.length;
    const res = await c.request({ destination: 'srvname.test', method: 'GET', path: '/federation/v1/version' });
    assert.equal(res.status, 200);
    assert.deepEqual(since(mark).map((s) => [s.peer, s.host, s.sni]), [['A', 'srvname.test', 'srvname.test']]);
  });

  test('connections are kept alive and reused', async () => {
    const c = track(client({ connectionsPerDestination: 1 }));
    const mark = seen.length;
    const sockets = new Set<unknown>();
    const onConnection = (socket: TLSSocket) => sockets.add(socket);
    peerA.server.on('secureConnection', onConnection);
    try {
      for (let i = 0; i < 5; i++) await c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/federation/v1/version' });
    } finally {
      peerA.server.off('secureConnection', onConnection);
    }
    assert.equal(since(mark).length, 5);
    assert.equal(sockets.size, 1);
  });
});

describe('certificates', () => {
  test('a certificate for another name fails with a TLS error naming the destination', async () => {
    const c = track(client());
    await failure(c.request({ destination: `hs3.test:${port}`, method: 'GET', path: '/federation/v1/version' }), 'tls', /hs3\.test/);
    await failure(c.request({ destination: `127.0.0.3:${port}`, method: 'GET', path: '/federation/v1/version' }), 'tls', /127\.0\.0\.3/);
  });

  test('a certificate from an untrusted CA fails with a TLS error', async () => {
    const c = track(new FederationClient({ authorize, dns: dnsClient }));
    await failure(c.request({ destination: `hs4.test:${port}`, method: 'GET', path: '/federation/v1/version' }), 'tls', /hs4\.test/);
  });

  test('disable_tls_validation accepts them', async () => {
    const c = track(client({ disableTlsValidation: true, ca: undefined }));
    const res = await c.request({ destination: `hs3.test:${port}`, method: 'GET', path: '/federation/v1/version' });
    assert.equal(res.status, 200);
    assert.equal((res.body as { peer: string }).peer, 'B');
  });
});

describe('the request', () => {
  test('the Authorization header is the callback\'s, made from the URI and body as sent', async () => {
    const c = track(client());
    const mark = seen.length;
    const callMark = calls.length;
    const body = { pdus: [], edus: [{ edu_type: 'm.typing', content: { text: 'é ☃' } }] };
    const res = await c.request({
      destination: `hs1.test:${port}`,
      method: 'PUT',
      path: '/federation/v1/send/txn%2F1',
      query: { a: 'x y', b: ['1', '2'], skip: undefined },
      body,
    });
    assert.equal(res.status, 200);
    const [call] = calls.slice(callMark);
    assert.deepEqual(call, {
      scheme: 'X-Chat',
      method: 'PUT',
      uri: '/_chat/federation/v1/send/txn%2F1?a=x%20y&b=1&b=2',
      destination: `hs1.test:${port}`,
      content: body,
    });
    const [got] = since(mark);
    assert.equal(got!.url, call!.uri);
    assert.equal(got!.authorization, `X-Chat origin="origin.test",destination="hs1.test:${port}",key="ed25519:k",sig="sig${callMark + 1}"`);
    assert.deepEqual(JSON.parse(got!.body), body);
  });

  test('a GET has no content; protocol_name matrix uses /_matrix and X-Matrix', async () => {
    const c = track(client({ protocolName: 'matrix' }));
    const callMark = calls.length;
    const mark = seen.length;
    await c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/key/v2/server' });
    assert.deepEqual(calls.slice(callMark).map((x) => [x.scheme, x.uri, x.content]), [['X-Matrix', '/_matrix/key/v2/server', undefined]]);
    assert.match(since(mark)[0]!.authorization!, /^X-Matrix /);
  });

  test('a JSON error answer is returned; a body that is not JSON or too large is an error', async () => {
    const c = track(client({ maxResponseBytes: 200 * 1024 }));
    const dest = `hs1.test:${port}`;
    assert.deepEqual(await c.request({ destination: dest, method: 'GET', path: '/test/error' }), {
      status: 500,
      body: { errcode: 'M_UNKNOWN', error: 'boom' },
    });
    await failure(c.request({ destination: dest, method: 'GET', path: '/test/html' }), 'response', /hs1\.test.*not JSON/);
    await failure(c.request({ destination: dest, method: 'GET', path: '/test/big' }), 'response', /hs1\.test.*over 204800 bytes/);
    // The pool survives a body it threw away.
    assert.equal((await c.request({ destination: dest, method: 'GET', path: '/federation/v1/version' })).status, 200);
  });

  test('nothing listening: a connection error naming the destination', async () => {
    const c = track(client());
    await failure(c.request({ destination: '127.0.0.3:1', method: 'GET', path: '/federation/v1/version' }), 'connect', /127\.0\.0\.3:1.*ECONNREFUSED/);
  });

  test('an unknown name: a resolution error', async () => {
    const c = track(client());
    await failure(c.request({ destination: 'nowhere.test:443', method: 'GET', path: '/federation/v1/version' }), 'resolution', /nowhere\.test/);
  });

  test('after close() requests are refused', async () => {
    const c = client();
    await c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/federation/v1/version' });
    await c.close();
    await failure(c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/federation/v1/version' }), 'connect', /closed/);
  });
});

describe('naming fallback', () => {
  for (const [name, how] of [['mx.test', '404 M_UNRECOGNIZED'], ['mx2.test', '404 without JSON']] as const) {
    test(`a server answering ${how} under /_chat is asked under /_matrix, and that is remembered`, async () => {
      const c = track(client());
      const dest = `${name}:${port}`;
      const callMark = calls.length;
      const mark = seen.length;
      const first = await c.request({ destination: dest, method: 'GET', path: '/federation/v1/version' });
      assert.equal(first.status, 200);
      assert.equal((first.body as { url: string }).url, '/_matrix/federation/v1/version');
      const second = await c.request({ destination: dest, method: 'GET', path: '/federation/v1/query/profile', query: { user_id: '@a:x' } });
      assert.equal(second.status, 200);
      assert.deepEqual(since(mark).map((s) => s.url), [
        '/_chat/federation/v1/version',
        '/_matrix/federation/v1/version',
        '/_matrix/federation/v1/query/profile?user_id=%40a%3Ax',
      ]);
      assert.deepEqual(calls.slice(callMark).map((x) => x.scheme), ['X-Chat', 'X-Matrix', 'X-Matrix']);
    });
  }

  test('a server that speaks chat is not asked twice for an endpoint it lacks', async () => {
    const c = track(client());
    const dest = `hs1.test:${port}`;
    await c.request({ destination: dest, method: 'GET', path: '/federation/v1/version' });
    const mark = seen.length;
    const res = await c.request({ destination: dest, method: 'GET', path: '/no/such/endpoint' });
    assert.equal(res.status, 404);
    assert.deepEqual(since(mark).map((s) => s.url), ['/_chat/no/such/endpoint']);
  });

  test('a server delegating only by /.well-known/matrix/server is asked under /_matrix at once', async () => {
    const c = track(client());
    const mark = seen.length;
    const res = await c.request({ destination: 'mxwk.test', method: 'GET', path: '/federation/v1/version' });
    assert.equal(res.status, 200);
    assert.deepEqual(since(mark).map((s) => s.url), [
      '/.well-known/chat/server',
      '/.well-known/matrix/server',
      '/_matrix/federation/v1/version',
    ]);
    assert.equal(since(mark)[2]!.host, `mx3.test:${port}`);
  });
});

describe('time limits', () => {
  test('a server that never answers fails at the limit while another destination answers at once', async () => {
    const c = track(client({ connectionsPerDestination: 2 }));
    const started = Date.now();
    // More hanging requests than the slow destination has connections.
    const slow = Array.from({ length: 4 }, () =>
      failure(c.request({ destination: `hs1.test:${port}`, method: 'GET', path: '/test/hang', timeoutMs: 800 }), 'timeout', /hs1\.test.*800 ms/),
    );
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const res = await c.request({ destination: `hs4.test:${port}`, method: 'GET', path: '/federation/v1/version' });
      assert.equal(res.status, 200);
      assert.ok(Date.now() - t0 < 500, `the other destination took ${Date.now() - t0} ms`);
    }
    await Promise.all(slow);
    const took = Date.now() - started;
    assert.ok(took >= 750 && took < 2500, `the slow requests took ${took} ms`);
  });
});
