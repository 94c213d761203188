import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/rate-limit.js';
import type { Requester, RouteDef } from '../../src/http/route.js';
import { HearthError } from '../../src/protocol/errors.js';

test('slots free after the cool-off; the answer says when', () => {
  let now = 1000;
  const limiter = new RateLimiter({ threshold: 3, cooloffMs: 500, now: () => now });
  assert.equal(limiter.take('a'), 0);
  now += 100;
  assert.equal(limiter.take('a'), 0);
  assert.equal(limiter.take('a'), 0);
  assert.equal(limiter.take('a'), 400); // the first slot frees at 1500
  assert.equal(limiter.take('b'), 0); // clients are counted apart
  now = 1500;
  assert.equal(limiter.take('a'), 0);
  assert.equal(limiter.take('a'), 100);
});

const USERS: Record<string, Requester> = {
  alice: { userId: '@alice:hs', deviceId: 'A', isGuest: false, isAdmin: false },
  bot: { userId: '@bot:hs', deviceId: 'B', isGuest: false, isAdmin: false },
};
const routes: RouteDef[] = [
  { method: 'POST', api: 'client', versions: ['v3'], path: '/write', handler: () => ({ body: {} }) },
  { method: 'GET', api: 'client', versions: ['v3'], path: '/read', handler: () => ({ body: {} }) },
  { method: 'POST', api: 'client', versions: ['v3'], path: '/free', rateLimited: false, handler: () => ({ body: {} }) },
  { method: 'POST', api: 'client', versions: ['v3'], path: '/anon', auth: 'none', handler: () => ({ body: {} }) },
];

describe('rate limiting over a real socket', () => {
  const app = buildHttpApp(routes, {
    authenticate: async (token) => {
      const r = USERS[token];
      if (!r) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
      return r;
    },
    rateLimiter: new RateLimiter({ threshold: 2, cooloffMs: 60_000, exemptUserIds: ['@bot:hs'] }),
  });
  let base = '';
  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/_chat/client/v3`;
  });
  after(() => app.close());
  const call = (path: string, token?: string, method = 'POST') =>
    fetch(base + path, { method, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(method === 'POST' ? { body: '{}' } : {}) });

  test('writes beyond the threshold get 429 M_LIMIT_EXCEEDED with retry_after_ms', async () => {
    assert.equal((await call('/write', 'alice')).status, 200);
    assert.equal((await call('/write', 'alice')).status, 200);
    const res = await call('/write', 'alice');
    assert.equal(res.status, 429);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body['errcode'], 'M_LIMIT_EXCEEDED');
    assert.ok(typeof body['retry_after_ms'] === 'number' && body['retry_after_ms'] > 0 && body['retry_after_ms'] <= 60_000);
  });

  test('reads, unlimited routes and exempt users are not limited; addresses are counted without a token', async () => {
    for (let i = 0; i < 5; i++) {
      assert.equal((await call('/read', 'alice', 'GET')).status, 200);
      assert.equal((await call('/free', 'alice')).status, 200);
      assert.equal((await call('/write', 'bot')).status, 200);
    }
    assert.equal((await call('/anon')).status, 200);
    assert.equal((await call('/anon')).status, 200);
    assert.equal((await call('/anon')).status, 429);
  });
});
