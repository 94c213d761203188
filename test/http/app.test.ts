import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import type { Requester, RouteDef } from '../../src/http/route.js';
import { HearthError } from '../../src/protocol/errors.js';

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

const routes: RouteDef[] = [
  {
    method: 'POST',
    api: 'client',
    auth: 'none',
    versions: ['r0', 'v3'],
    path: '/echo/:thing',
    handler: (req) => ({ body: { params: req.params, body: req.body, token: req.accessToken ?? null } }),
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/echo/:thing',
    handler: (req) => ({ body: { thing: req.params['thing'], query: req.query } }),
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/forbidden',
    handler: () => {
      throw new HearthError(403, 'M_FORBIDDEN', 'not you', { extra_field: 1 });
    },
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/crash',
    handler: () => {
      throw new Error('secret internals at /srv/hearth');
    },
  },
  { method: 'GET', api: 'wellKnown', path: '/client', handler: () => ({ body: { wk: true } }) },
  { method: 'GET', api: 'admin', versions: ['v1'], path: '/ping', auth: 'none', handler: () => ({ body: {} }) },
  { method: 'POST', api: 'client', versions: ['v3'], path: '/whoami', handler: (req) => ({ body: { who: req.requester?.userId ?? null, body: req.body } }) },
  { method: 'GET', api: 'client', versions: ['v3'], path: '/guest-ok', auth: 'guest', handler: (req) => ({ body: { who: req.requester?.userId } }) },
  { method: 'GET', api: 'client', versions: ['v3'], path: '/maybe', auth: 'optional', handler: (req) => ({ body: { who: req.requester?.userId ?? null } }) },
  { method: 'GET', api: 'admin', versions: ['v1'], path: '/secret', handler: (req) => ({ body: { who: req.requester?.userId } }) },
  { method: 'GET', api: 'root', path: '/health', handler: () => ({ body: 'OK' }) },
];

const TOKENS: Record<string, Requester> = {
  alice: { userId: '@alice:hs', deviceId: 'A', isGuest: false, isAdmin: false },
  guest: { userId: '@123:hs', deviceId: 'G', isGuest: true, isAdmin: false },
  admin: { userId: '@root:hs', deviceId: 'R', isGuest: false, isAdmin: true },
};
const authenticate = async (token: string) => {
  const r = TOKENS[token];
  if (!r) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
  return r;
};

describe('HTTP app over a real socket', () => {
  const app = buildHttpApp(routes, { jsonBodyLimit: 1024, authenticate });
  let base = '';
  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(() => app.close());

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  test('one definition answers under every prefix and version', async () => {
    for (const prefix of ['/_chat/client/v3', '/_chat/client/r0', '/_matrix/client/v3', '/_matrix/client/r0']) {
      const res = await post(`${prefix}/echo/x`, '{"a":1}');
      assert.equal(res.status, 200, prefix);
      assert.deepEqual(await res.json(), { params: { thing: 'x' }, body: { a: 1 }, token: null });
    }
    assert.equal((await fetch(`${base}/.well-known/chat/client`)).status, 200);
    assert.equal((await fetch(`${base}/.well-known/matrix/client`)).status, 200);
    assert.equal((await fetch(`${base}/_ext/admin/v1/ping`)).status, 200);
    assert.equal((await fetch(`${base}/_synapse/admin/v1/ping`)).status, 200);
    assert.equal((await fetch(`${base}/health`)).status, 200);
  });

  test('path parameters are percent-decoded; query arrays kept', async () => {
    const res = await fetch(`${base}/_chat/client/v3/echo/${encodeURIComponent('!a/b:example.org')}?x=1&x=2&y=3`);
    assert.deepEqual(await res.json(), { thing: '!a/b:example.org', query: { x: ['1', '2'], y: '3' } });
  });

  test('bodies: empty reads as {}, no content type still parsed', async () => {
    let res = await fetch(`${base}/_chat/client/v3/echo/x`, { method: 'POST' });
    assert.deepEqual((await json(res)).body, {});
    res = await fetch(`${base}/_chat/client/v3/echo/x`, { method: 'POST', body: '{"b":2}', headers: { 'content-type': 'text/plain' } });
    assert.deepEqual((await json(res)).body, { b: 2 });
  });

  test('malformed JSON is 400 M_NOT_JSON; a non-object is 400 M_BAD_JSON', async () => {
    for (const bad of ['{', 'nope', '{"a":1,}']) {
      const res = await post('/_chat/client/v3/echo/x', bad);
      assert.equal(res.status, 400);
      assert.equal((await json(res)).errcode, 'M_NOT_JSON');
    }
    const invalidUtf8 = await fetch(`${base}/_chat/client/v3/echo/x`, { method: 'POST', body: Buffer.from([0x7b, 0xff, 0x7d]) });
    assert.equal((await json(invalidUtf8)).errcode, 'M_NOT_JSON');
    for (const bad of ['[1]', '"s"', '3', 'null']) {
      const res = await post('/_chat/client/v3/echo/x', bad);
      assert.equal(res.status, 400);
      assert.equal((await json(res)).errcode, 'M_BAD_JSON');
    }
  });

  test('a body over the limit is 413 M_TOO_LARGE', async () => {
    const res = await post('/_chat/client/v3/echo/x', JSON.stringify({ big: 'x'.repeat(2000) }));
    assert.equal(res.status, 413);
    assert.equal((await json(res)).errcode, 'M_TOO_LARGE');
  });

  test('unknown path 404 and wrong method 405, both M_UNRECOGNIZED', async () => {
    let res = await fetch(`${base}/_chat/client/v3/nothing-here`);
    assert.equal(res.status, 404);
    assert.equal((await json(res)).errcode, 'M_UNRECOGNIZED');
    res = await fetch(`${base}/_chat/client/v3/echo/x`, { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.equal((await json(res)).errcode, 'M_UNRECOGNIZED');
    res = await fetch(`${base}/_chat/client/r0/echo/x`); // GET exists only under v3
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST, OPTIONS');
    assert.equal((await json(res)).errcode, 'M_UNRECOGNIZED');
    res = await fetch(`${base}/_matrix/client/r0/echo/x`, { method: 'HEAD' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST, OPTIONS');
    res = await fetch(`${base}/_matrix/client/r0/echo/x`, { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST, OPTIONS');
    // r0 is routed as v3, but a path that only v3 routes serve is unknown under r0.
    for (const prefix of ['/_chat/client/r0', '/_matrix/client/r0']) {
      res = await fetch(`${base}${prefix}/forbidden`);
      assert.equal(res.status, 404, prefix);
      assert.equal((await json(res)).errcode, 'M_UNRECOGNIZED');
      res = await fetch(`${base}${prefix}/forbidden`, { method: 'DELETE' });
      assert.equal(res.status, 404, prefix);
      res = await fetch(`${base}${prefix}/whoami`, { method: 'POST', body: '{}' });
      assert.equal(res.status, 404, prefix);
    }
    assert.equal((await fetch(`${base}/_chat/client/v3/forbidden`)).status, 403);
    // The same under the other names, which the router reaches by rewriting them.
    res = await fetch(`${base}/_matrix/client/v3/echo/x`, { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
    res = await fetch(`${base}/_matrix/client/v3/nothing-here`);
    assert.equal(res.status, 404);
    assert.equal((await fetch(`${base}/_matrixx/client/v3/echo/x`)).status, 404);
    assert.equal((await fetch(`${base}/_synapse/client/v1/ping`)).status, 404);
  });

  test('HearthError keeps status, errcode and extra fields; other errors leak nothing', async () => {
    let res = await fetch(`${base}/_chat/client/v3/forbidden`);
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), { errcode: 'M_FORBIDDEN', error: 'not you', extra_field: 1 });
    res = await fetch(`${base}/_chat/client/v3/crash`);
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.deepEqual(JSON.parse(text), { errcode: 'M_UNKNOWN', error: 'Internal server error' });
    assert.ok(!text.includes('secret'));
  });

  test('CORS headers everywhere; OPTIONS preflight answers 200', async () => {
    let res = await fetch(`${base}/_chat/client/v3/echo/x`, { method: 'OPTIONS' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /Authorization/);
    res = await fetch(`${base}/_chat/client/v3/nothing-here`);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    res = await fetch(`${base}/_chat/client/v3/forbidden`);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
  });

  test('access token from the Authorization header or the query', async () => {
    let res = await post('/_chat/client/v3/echo/x', '{}', { authorization: 'Bearer tok1' });
    assert.equal((await json(res)).token, 'tok1');
    res = await post('/_chat/client/v3/echo/x?access_token=tok2', '{}');
    assert.equal((await json(res)).token, 'tok2');
  });

  test('authentication: missing, unknown, guest, optional and admin', async () => {
    const call = (path: string, token?: string, init: RequestInit = {}) =>
      fetch(base + path, { ...init, headers: token ? { authorization: `Bearer ${token}` } : {} });
    let res = await call('/_chat/client/v3/whoami', undefined, { method: 'POST', body: '{bad json' });
    assert.equal(res.status, 401);
    assert.equal((await json(res)).errcode, 'M_MISSING_TOKEN');
    res = await call('/_chat/client/v3/whoami', 'nope', { method: 'POST', body: '{}' });
    assert.equal(res.status, 401);
    assert.equal((await json(res)).errcode, 'M_UNKNOWN_TOKEN');
    res = await call('/_chat/client/v3/whoami', 'alice', { method: 'POST', body: '{"x":1}' });
    assert.deepEqual(await json(res), { who: '@alice:hs', body: { x: 1 } });
    res = await call('/_chat/client/v3/whoami', 'guest', { method: 'POST', body: '{}' });
    assert.equal(res.status, 403);
    assert.equal((await json(res)).errcode, 'M_GUEST_ACCESS_FORBIDDEN');
    res = await call('/_chat/client/v3/guest-ok', 'guest');
    assert.deepEqual(await json(res), { who: '@123:hs' });
    res = await call('/_chat/client/v3/maybe');
    assert.deepEqual(await json(res), { who: null });
    res = await call('/_chat/client/v3/maybe', 'alice');
    assert.deepEqual(await json(res), { who: '@alice:hs' });
    res = await call('/_chat/client/v3/maybe', 'nope');
    assert.equal(res.status, 401);
    res = await call('/_synapse/admin/v1/secret', 'alice');
    assert.equal(res.status, 403);
    assert.equal((await json(res)).errcode, 'M_FORBIDDEN');
    res = await call('/_synapse/admin/v1/secret', 'admin');
    assert.deepEqual(await json(res), { who: '@root:hs' });
  });
});
