// Server-name resolution against a real DNS server and real HTTPS well-known servers on loopback:
// each step of the spec's process, for both namings, and the caching of well-known answers.

import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as dns } from 'node:dns';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FederationError, ServerResolver, dnsLookup } from '../../src/federation/resolve.js';
import { type TestDnsServer, startDnsServer } from '../support/dns-server.js';
import { type TestHttpsServer, createTestCa, listenHttps } from '../support/test-ca.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const json = (body: unknown, headers: Record<string, string> = {}): Handler => (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

let dnsServer: TestDnsServer;
let web: TestHttpsServer;
/** `hostname path` → handler, for the well-known server every test name points at. */
const routes = new Map<string, Handler>();
/** `hostname path` of every request the well-known server got. */
const fetched: string[] = [];
let now = Date.now();
let resolver: ServerResolver;

function count(key: string): number {
  return fetched.filter((f) => f === key).length;
}

/** Points `name` at the well-known server (127.0.0.2) and serves `handler` at its well-known path. */
function wellKnown(name: string, handler: Handler, naming: 'chat' | 'matrix' = 'chat'): void {
  dnsServer.set(name, { a: ['127.0.0.2'] });
  routes.set(`${name} /.well-known/${naming}/server`, handler);
}

before(async () => {
  dnsServer = await startDnsServer();
  const ca = createTestCa();
  // One certificate for every name the tests use: these tests are about where, not about trust.
  const names = Array.from({ length: 40 }, (_, i) => `wk${i}.test`).concat('plain.test', 'hang.test', 'big.test');
  web = await listenHttps('127.0.0.2', 0, ca.issue(names), (req, res) => {
    const host = String(req.headers.host).replace(/:\d+$/, '');
    const key = `${host} ${req.url}`;
    fetched.push(key);
    const handler = routes.get(key);
    if (handler) return handler(req, res);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"errcode":"M_UNRECOGNIZED","error":"Unrecognized request"}');
  });
  const dnsClient = new dns.Resolver({ timeout: 1000, tries: 1 });
  dnsClient.setServers([dnsServer.address]);
  resolver = new ServerResolver({ dns: dnsClient, ca: ca.cert, wellKnownPort: web.port, wellKnownTimeoutMs: 2000, now: () => now });
});

after(async () => {
  await resolver.close();
  await web.close();
  await dnsServer.close();
});

beforeEach(() => {
  resolver.clearCaches();
  now = Date.now();
});

describe('without discovery', () => {
  test('an IP literal is used as it is, on the given port or 8448, with no DNS question', async () => {
    const asked = dnsServer.queries.length;
    assert.deepEqual(await resolver.resolve('127.0.0.2', 'chat'), {
      host: '127.0.0.2', port: 8448, tlsServerName: '127.0.0.2', hostHeader: '127.0.0.2', via: 'ip-literal',
    });
    assert.deepEqual(await resolver.resolve('127.0.0.2:1234', 'matrix'), {
      host: '127.0.0.2', port: 1234, tlsServerName: '127.0.0.2', hostHeader: '127.0.0.2:1234', via: 'ip-literal',
    });
    assert.deepEqual(await resolver.resolve('[::1]:99', 'chat'), {
      host: '::1', port: 99, tlsServerName: '::1', hostHeader: '[::1]:99', via: 'ip-literal',
    });
    assert.equal(dnsServer.queries.length, asked);
  });

  test('a hostname with a port is used as it is; no well-known is fetched', async () => {
    wellKnown('wk0.test', json({ 'm.server': 'elsewhere.test:1' }));
    assert.deepEqual(await resolver.resolve('wk0.test:1234', 'chat'), {
      host: 'wk0.test', port: 1234, tlsServerName: 'wk0.test', hostHeader: 'wk0.test:1234', via: 'explicit-port',
    });
    assert.equal(count('wk0.test /.well-known/chat/server'), 0);
  });

  test('no well-known and no SRV: the hostname on 8448', async () => {
    dnsServer.set('plain.test', { a: ['127.0.0.2'] });
    assert.deepEqual(await resolver.resolve('plain.test', 'chat'), {
      host: 'plain.test', port: 8448, tlsServerName: 'plain.test', hostHeader: 'plain.test', via: 'default-port',
    });
    assert.equal(count('plain.test /.well-known/chat/server'), 1);
  });

  test('a name that is not a server name fails with a resolution error', async () => {
    await assert.rejects(resolver.resolve('bad name', 'chat'), (err) => err instanceof FederationError && err.reason === 'resolution' && /bad name/.test(err.message));
  });
});

describe('well-known delegation', () => {
  test('to a hostname with a port: connect there, Host and certificate name are the delegated name', async () => {
    wellKnown('wk1.test', json({ 'm.server': 'fed1.test:4567' }));
    assert.deepEqual(await resolver.resolve('wk1.test', 'chat'), {
      host: 'fed1.test', port: 4567, tlsServerName: 'fed1.test', hostHeader: 'fed1.test:4567', via: 'well-known',
    });
  });

  test('to a hostname without a port: its SRV record, else 8448', async () => {
    wellKnown('wk2.test', json({ 'm.server': 'fed2.test' }));
    dnsServer.set('_chat._tcp.fed2.test', { srv: [{ port: 7000, target: 'box.test' }] });
    assert.deepEqual(await resolver.resolve('wk2.test', 'chat'), {
      host: 'box.test', port: 7000, tlsServerName: 'fed2.test', hostHeader: 'fed2.test', via: 'well-known',
    });
    wellKnown('wk3.test', json({ 'm.server': 'fed3.test' }));
    assert.deepEqual(await resolver.resolve('wk3.test', 'chat'), {
      host: 'fed3.test', port: 8448, tlsServerName: 'fed3.test', hostHeader: 'fed3.test', via: 'well-known',
    });
  });

  test('to an IP literal: the address, with Host and certificate name the address', async () => {
    wellKnown('wk4.test', json({ 'm.server': '127.0.0.3:9000' }));
    assert.deepEqual(await resolver.resolve('wk4.test', 'chat'), {
      host: '127.0.0.3', port: 9000, tlsServerName: '127.0.0.3', hostHeader: '127.0.0.3:9000', via: 'well-known',
    });
    wellKnown('wk5.test', json({ 'm.server': '[::1]' }));
    assert.deepEqual(await resolver.resolve('wk5.test', 'chat'), {
      host: '::1', port: 8448, tlsServerName: '::1', hostHeader: '[::1]', via: 'well-known',
    });
  });

  test('each naming reads its own well-known path', async () => {
    wellKnown('wk6.test', json({ 'm.server': 'chat-side.test:1' }), 'chat');
    wellKnown('wk6.test', json({ 'm.server': 'matrix-side.test:2' }), 'matrix');
    assert.equal((await resolver.resolve('wk6.test', 'chat')).host, 'chat-side.test');
    assert.equal((await resolver.resolve('wk6.test', 'matrix')).host, 'matrix-side.test');
  });

  test('a successful answer is cached for its max-age, capped at 48 h, 24 h without one', async () => {
    wellKnown('wk7.test', json({ 'm.server': 'fed7.test:1' }, { 'cache-control': 'public, max-age=600' }));
    const path = 'wk7.test /.well-known/chat/server';
    await resolver.resolve('wk7.test', 'chat');
    now += 599_000;
    await resolver.resolve('wk7.test', 'chat');
    assert.equal(count(path), 1);
    now += 2_000;
    await resolver.resolve('wk7.test', 'chat');
    assert.equal(count(path), 2);

    wellKnown('wk8.test', json({ 'm.server': 'fed8.test:1' }));
    await resolver.resolve('wk8.test', 'chat');
    now += 23 * 3600_000;
    await resolver.resolve('wk8.test', 'chat');
    assert.equal(count('wk8.test /.well-known/chat/server'), 1);
    now += 3600_000 + 1000;
    await resolver.resolve('wk8.test', 'chat');
    assert.equal(count('wk8.test /.well-known/chat/server'), 2);

    wellKnown('wk9.test', json({ 'm.server': 'fed9.test:1' }, { 'cache-control': 'max-age=31536000' }));
    await resolver.resolve('wk9.test', 'chat');
    now += 48 * 3600_000 + 1000;
    await resolver.resolve('wk9.test', 'chat');
    assert.equal(count('wk9.test /.well-known/chat/server'), 2);
  });

  test('a failed lookup is cached for an hour', async () => {
    dnsServer.set('wk10.test', { a: ['127.0.0.2'] }); // no well-known route: 404
    const path = 'wk10.test /.well-known/chat/server';
    assert.equal((await resolver.resolve('wk10.test', 'chat')).via, 'default-port');
    now += 59 * 60_000;
    await resolver.resolve('wk10.test', 'chat');
    assert.equal(count(path), 1);
    // It now exists, and is found once the failure expires.
    routes.set(path, json({ 'm.server': 'fed10.test:5' }));
    now += 2 * 60_000;
    assert.equal((await resolver.resolve('wk10.test', 'chat')).host, 'fed10.test');
    assert.equal(count(path), 2);
  });

  test('concurrent resolutions of a new name share one fetch', async () => {
    wellKnown('wk11.test', json({ 'm.server': 'fed11.test:1' }));
    const all = await Promise.all(Array.from({ length: 5 }, () => resolver.resolve('wk11.test', 'chat')));
    assert.ok(all.every((r) => r.host === 'fed11.test'));
    assert.equal(count('wk11.test /.well-known/chat/server'), 1);
  });

  test('an answer that is not JSON, lacks m.server or has an invalid one counts as none', async () => {
    const bad: Handler[] = [
      (_req, res) => res.end('<html>hello</html>'),
      json({ 'not.m.server': 'x.test' }),
      json({ 'm.server': 'bad name:99' }),
      json({ 'm.server': 42 }),
      json(['m.server']),
    ];
    for (const [i, handler] of bad.entries()) {
      const name = `wk${12 + i}.test`;
      wellKnown(name, handler);
      assert.equal((await resolver.resolve(name, 'chat')).via, 'default-port', `case ${i}`);
    }
  });

  test('redirects are followed up to 5 hops', async () => {
    const redirect = (to: string): Handler => (_req, res) => {
      res.writeHead(302, { location: to });
      res.end();
    };
    wellKnown('wk20.test', redirect('/hop1'));
    routes.set('wk20.test /hop1', redirect(`https://wk21.test:${web.port}/hop2`));
    dnsServer.set('wk21.test', { a: ['127.0.0.2'] });
    routes.set('wk21.test /hop2', json({ 'm.server': 'fed20.test:1' }));
    assert.equal((await resolver.resolve('wk20.test', 'chat')).host, 'fed20.test');

    // Six redirects in a row: given up, so no delegation.
    wellKnown('wk22.test', redirect('/r1'));
    for (let i = 1; i <= 5; i++) routes.set(`wk22.test /r${i}`, redirect(`/r${i + 1}`));
    routes.set('wk22.test /r6', json({ 'm.server': 'fed22.test:1' }));
    assert.equal((await resolver.resolve('wk22.test', 'chat')).via, 'default-port');
    assert.equal(count('wk22.test /r6'), 0);

    // Five is still fine.
    wellKnown('wk23.test', redirect('/r1'));
    for (let i = 1; i <= 4; i++) routes.set(`wk23.test /r${i}`, redirect(`/r${i + 1}`));
    routes.set('wk23.test /r5', json({ 'm.server': 'fed23.test:1' }));
    assert.equal((await resolver.resolve('wk23.test', 'chat')).host, 'fed23.test');
  });

  test('a body over 50 KiB counts as none', async () => {
    wellKnown('big.test', json({ 'm.server': 'fed-big.test:1', padding: 'x'.repeat(60 * 1024) }));
    assert.equal((await resolver.resolve('big.test', 'chat')).via, 'default-port');
    wellKnown('wk24.test', json({ 'm.server': 'fed24.test:1', padding: 'x'.repeat(40 * 1024) }));
    assert.equal((await resolver.resolve('wk24.test', 'chat')).host, 'fed24.test');
  });

  test('a well-known server that never answers is given up on at the time limit', async () => {
    wellKnown('hang.test', () => {}); // never answers
    const started = Date.now();
    assert.equal((await resolver.resolve('hang.test', 'chat')).via, 'default-port');
    const took = Date.now() - started;
    assert.ok(took >= 1800 && took < 6000, `took ${took} ms`);
  });
});

describe('SRV records', () => {
  test('chat: _chat._tcp, and never the Matrix labels', async () => {
    dnsServer.set('_chat._tcp.s1.test', { srv: [{ port: 8111, target: 'srv1.test' }] });
    assert.deepEqual(await resolver.resolve('s1.test', 'chat'), {
      host: 'srv1.test', port: 8111, tlsServerName: 's1.test', hostHeader: 's1.test', via: 'srv',
    });
    dnsServer.set('_matrix-fed._tcp.s2.test', { srv: [{ port: 8222, target: 'srv2.test' }] });
    assert.equal((await resolver.resolve('s2.test', 'chat')).via, 'default-port');
  });

  test('matrix: _matrix-fed._tcp first, then the deprecated _matrix._tcp', async () => {
    dnsServer.set('_matrix-fed._tcp.s3.test', { srv: [{ port: 8333, target: 'srv3.test' }] });
    dnsServer.set('_matrix._tcp.s3.test', { srv: [{ port: 9333, target: 'old3.test' }] });
    assert.deepEqual(await resolver.resolve('s3.test', 'matrix'), {
      host: 'srv3.test', port: 8333, tlsServerName: 's3.test', hostHeader: 's3.test', via: 'srv',
    });
    dnsServer.set('_matrix._tcp.s4.test', { srv: [{ port: 9444, target: 'old4.test' }] });
    assert.deepEqual(await resolver.resolve('s4.test', 'matrix'), {
      host: 'old4.test', port: 9444, tlsServerName: 's4.test', hostHeader: 's4.test', via: 'srv',
    });
    assert.equal((await resolver.resolve('s4.test', 'chat')).via, 'default-port');
  });

  test('the lowest priority wins', async () => {
    dnsServer.set('_chat._tcp.s5.test', {
      srv: [
        { priority: 20, port: 2, target: 'backup.test' },
        { priority: 10, port: 1, target: 'main.test' },
      ],
    });
    for (let i = 0; i < 5; i++) {
      resolver.clearCaches();
      assert.equal((await resolver.resolve('s5.test', 'chat')).host, 'main.test');
    }
  });
});

test('the lookup for connections asks the injected DNS server, AAAA and A', async () => {
  dnsServer.set('hs1.test', { a: ['127.0.0.2'], aaaa: ['::1'] });
  dnsServer.set('v4only.test', { a: ['127.0.0.3'] });
  const dnsClient = new dns.Resolver({ timeout: 1000, tries: 1 });
  dnsClient.setServers([dnsServer.address]);
  const lookup = dnsLookup(dnsClient);
  const ask = (name: string, all: boolean) =>
    new Promise<unknown>((resolve, reject) =>
      lookup(name, { all }, (err, address, family) => (err ? reject(err) : resolve(all ? address : [address, family]))),
    );
  assert.deepEqual(await ask('hs1.test', true), [{ address: '::1', family: 6 }, { address: '127.0.0.2', family: 4 }]);
  assert.deepEqual(await ask('v4only.test', false), ['127.0.0.3', 4]);
  await assert.rejects(ask('missing.test', true), { code: 'ENOTFOUND' });
});
