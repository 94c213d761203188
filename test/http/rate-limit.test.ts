// Rate limits: the buckets with a hand-driven clock, what each limit counts, and the 429 a route
// that names a limit answers over a real socket.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { Buckets, type RateLimitSettings, RateLimitError, RateLimiter, loginAccount } from '../../src/http/rate-limit.js';
import type { Requester, RouteDef } from '../../src/http/route.js';
import { HearthError } from '../../src/protocol/errors.js';
import { eventually } from '../support/eventually.js';

/** Every limit at `burst` actions, draining at one a second. */
function settings(burst: number): RateLimitSettings {
  const b = { per_second: 1, burst_count: burst };
  return {
    message: b,
    room_creation: b,
    joins: b,
    invites: b,
    login: { address: b, account: b, failed_attempts: b },
    registration: b,
    registration_token_validity: b,
    media_create: b,
  };
}

const user = (name: string, extra: Partial<Requester> = {}): Requester => ({
  userId: `@${name}:hs`,
  deviceId: 'D',
  isGuest: false,
  isAdmin: false,
  ...extra,
});

describe('a bucket', () => {
  test('holds burst_count actions, then says how long until the next, and drains at per_second', () => {
    let now = 10_000;
    const bucket = new Buckets('message', { per_second: 2, burst_count: 3 }, () => now);
    assert.deepEqual([bucket.take('a'), bucket.take('a'), bucket.take('a')], [0, 0, 0]);
    assert.equal(bucket.take('a'), 500, 'one action drains in half a second');
    assert.equal(bucket.take('b'), 0, 'keys are counted apart');
    now += 200;
    assert.equal(bucket.take('a'), 300);
    now += 300;
    assert.equal(bucket.take('a'), 0);
    assert.equal(bucket.take('a'), 500);
    now += 10_000;
    assert.deepEqual([bucket.take('a'), bucket.take('a'), bucket.take('a'), bucket.take('a')], [0, 0, 0, 500], 'never more than the burst');
  });

  test('an action given back frees its place', () => {
    const bucket = new Buckets('message', { per_second: 0.001, burst_count: 1 }, () => 0);
    assert.equal(bucket.take('a'), 0);
    assert.ok(bucket.take('a') > 0);
    bucket.giveBack('a');
    assert.equal(bucket.take('a'), 0);
    bucket.giveBack('never-seen');
  });

  test('drained buckets are swept as keys come in, and the number of keys stays bounded', () => {
    let now = 0;
    const bucket = new Buckets('login.address', { per_second: 1, burst_count: 5 }, () => now);
    for (let i = 0; i < 5000; i++) bucket.take(`old-${i}`);
    assert.equal(bucket.size, 5000);
    now += 2000; // every old bucket has drained
    for (let i = 0; i < 5000; i++) bucket.take(`new-${i}`);
    assert.ok(bucket.size <= 5000, `${bucket.size} keys after the old ones drained`);
    // Keys that never drain (the clock stands still) are capped.
    for (let i = 0; i < 150_000; i++) bucket.take(`flood-${i}`);
    assert.ok(bucket.size <= 100_000, `${bucket.size} keys`);
  });
});

describe('what each limit counts', () => {
  const ctx = (requester: Requester | undefined, body: unknown = {}, address = '192.0.2.1') => ({ requester, address, body });

  test('a sent event counts only when it succeeds; the refusal names the limit', () => {
    const limiter = new RateLimiter({ limits: settings(2), now: () => 0 });
    const alice = user('alice');
    limiter.settle(limiter.charge('message', ctx(alice)), 403);
    limiter.settle(limiter.charge('message', ctx(alice)), 500);
    limiter.settle(limiter.charge('message', ctx(alice)), 200);
    limiter.settle(limiter.charge('message', ctx(alice)), 200);
    assert.throws(
      () => limiter.charge('message', ctx(alice)),
      (err: unknown) => err instanceof RateLimitError && err.limit === 'message' && err.status === 429 && err.errcode === 'M_LIMIT_EXCEEDED' && err.extra['retry_after_ms'] === 1000,
    );
    // Each limit has its own buckets.
    limiter.settle(limiter.charge('joins', ctx(alice)), 200);
    limiter.settle(limiter.charge('message', ctx(user('bob'))), 200);
  });

  test('media uploads count every attempt, refused ones too, per user; appservices registered unlimited are exempt', () => {
    const limiter = new RateLimiter({ limits: settings(2), appserviceRateLimited: (id) => id !== 'free-bridge', now: () => 0 });
    const alice = user('alice');
    limiter.settle(limiter.charge('media_create', ctx(alice)), 413);
    limiter.settle(limiter.charge('media_create', ctx(alice)), 200);
    assert.throws(() => limiter.charge('media_create', ctx(alice)), (err: unknown) => err instanceof RateLimitError && err.limit === 'media_create');
    limiter.settle(limiter.charge('message', ctx(alice)), 200);
    const puppet = user('puppet', { appserviceId: 'free-bridge' });
    for (let i = 0; i < 5; i++) limiter.settle(limiter.charge('media_create', ctx(puppet)), 200);
  });

  test('requests in flight hold their place: concurrent sends cannot pass a full bucket', () => {
    const limiter = new RateLimiter({ limits: settings(2), now: () => 0 });
    const alice = user('alice');
    limiter.charge('message', ctx(alice));
    limiter.charge('message', ctx(alice));
    assert.throws(() => limiter.charge('message', ctx(alice)), RateLimitError);
  });

  test('admins, listed users and appservices registered unlimited are exempt', () => {
    const limiter = new RateLimiter({
      limits: settings(1),
      exemptUserIds: ['@bot:hs'],
      appserviceRateLimited: (id) => id !== 'free-bridge',
      now: () => 0,
    });
    for (const requester of [user('admin', { isAdmin: true }), user('bot'), user('puppet', { appserviceId: 'free-bridge' })]) {
      for (let i = 0; i < 5; i++) limiter.settle(limiter.charge('message', ctx(requester)), 200);
    }
    const limited = user('ghost', { appserviceId: 'other-bridge' });
    limiter.settle(limiter.charge('message', ctx(limited)), 200);
    assert.throws(() => limiter.charge('message', ctx(limited)), RateLimitError);
  });

  test("a user's override replaces the per-user limits; 0 and 0 exempts", () => {
    const overrides: Record<string, { per_second: number; burst_count: number }> = { '@free:hs': { per_second: 0, burst_count: 0 }, '@more:hs': { per_second: 1, burst_count: 3 } };
    const limiter = new RateLimiter({ limits: settings(1), userOverride: (userId) => overrides[userId], now: () => 0 });
    for (let i = 0; i < 5; i++) limiter.settle(limiter.charge('message', ctx(user('free'))), 200);
    for (let i = 0; i < 3; i++) limiter.settle(limiter.charge('joins', ctx(user('more'))), 200);
    assert.throws(() => limiter.charge('joins', ctx(user('more'))), RateLimitError);
    limiter.settle(limiter.charge('message', ctx(user('other'))), 200);
    assert.throws(() => limiter.charge('message', ctx(user('other'))), RateLimitError);
  });

  test('registration counts completed registrations per address, not the steps before', () => {
    const limiter = new RateLimiter({ limits: settings(2), now: () => 0 });
    for (let i = 0; i < 5; i++) limiter.settle(limiter.charge('registration', ctx(undefined)), 401);
    limiter.settle(limiter.charge('registration', ctx(undefined)), 200);
    limiter.settle(limiter.charge('registration', ctx(undefined)), 200);
    assert.throws(() => limiter.charge('registration', ctx(undefined)), (err: unknown) => err instanceof RateLimitError && err.limit === 'registration');
    limiter.charge('registration', ctx(undefined, {}, '192.0.2.2'));
  });

  test('login: every attempt per address, successes per account, failures per account', () => {
    const limiter = new RateLimiter({ limits: settings(3), serverName: 'hs', now: () => 0 });
    const login = (who: unknown, status: number, address = '192.0.2.1') =>
      limiter.settle(limiter.charge('login', ctx(undefined, { type: 'm.login.password', identifier: { type: 'm.id.user', user: who } }, address)), status);
    // Three wrong passwords for alice from three addresses: her failed attempts are used up.
    login('alice', 403, '192.0.2.10');
    login('@Alice:hs', 403, '192.0.2.11');
    login('ALICE', 403, '192.0.2.12');
    assert.throws(() => login('alice', 200, '192.0.2.13'), (err: unknown) => err instanceof RateLimitError && err.limit === 'login.failed_attempts');
    // Three successful logins for bob from one address: the address is used up, then bob's account.
    login('bob', 200, '192.0.2.20');
    login('bob', 200, '192.0.2.20');
    login('bob', 200, '192.0.2.20');
    assert.throws(() => login('carol', 200, '192.0.2.20'), (err: unknown) => err instanceof RateLimitError && err.limit === 'login.address');
    assert.throws(() => login('bob', 200, '192.0.2.21'), (err: unknown) => err instanceof RateLimitError && err.limit === 'login.account');
    // A refusal takes nothing: carol still logs in from elsewhere.
    login('carol', 200, '192.0.2.22');
  });

  test('the account a login names', () => {
    assert.equal(loginAccount({ identifier: { type: 'm.id.user', user: 'Alice' } }, 'hs'), '@alice:hs');
    assert.equal(loginAccount({ identifier: { type: 'm.id.user', user: '@Alice:HS' } }, 'hs'), '@alice:hs');
    assert.equal(loginAccount({ user: 'bob' }, 'hs'), '@bob:hs');
    assert.equal(loginAccount({ identifier: { type: 'm.id.thirdparty', medium: 'email', address: 'A@Example.org' } }, 'hs'), 'email:a@example.org');
    assert.equal(loginAccount({ type: 'm.login.token', token: 'x' }, 'hs'), undefined);
    assert.equal(loginAccount({ identifier: { type: 'm.id.user', user: 7 } }, 'hs'), undefined);
    assert.equal(loginAccount({ identifier: 'alice' }, 'hs'), undefined);
    assert.equal(loginAccount(null, 'hs'), undefined);
  });
});

describe('rate limits over a real socket', () => {
  const USERS: Record<string, Requester> = { alice: user('alice'), admin: user('admin', { isAdmin: true }) };
  const ok = () => ({ body: {} });
  const routes: RouteDef[] = [
    { method: 'PUT', api: 'client', versions: ['v3'], path: '/send/:txn', rateLimit: 'message', handler: ok },
    { method: 'PUT', api: 'client', versions: ['v3'], path: '/free/:txn', handler: ok },
    { method: 'POST', api: 'client', versions: ['v3'], path: '/login', auth: 'none', rateLimit: 'login', handler: ok },
    {
      method: 'PUT',
      api: 'client',
      versions: ['v3'],
      path: '/fail/:txn',
      rateLimit: 'message',
      handler: () => {
        throw HearthError.forbidden('not in the room');
      },
    },
  ];
  const lines: Record<string, unknown>[] = [];
  const app = buildHttpApp(routes, {
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } },
    authenticate: async (token) => {
      const r = USERS[token];
      if (!r) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
      return r;
    },
    rateLimiter: new RateLimiter({ limits: { ...settings(3), message: { per_second: 0.01, burst_count: 3 } } }),
  });
  let base = '';
  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/_chat/client/v3`;
  });
  after(() => app.close());
  let txn = 0;
  const put = (path: string, token: string) =>
    fetch(`${base}${path}/${txn++}`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: '{}' });

  test('beyond the burst: 429 M_LIMIT_EXCEEDED with retry_after_ms, Retry-After in whole seconds, and a log line naming the limit', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await put('/send', 'alice')).status, 200);
    const res = await put('/send', 'alice');
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    const body = (await res.json()) as { errcode: string; error: string; retry_after_ms: number };
    assert.equal(body.errcode, 'M_LIMIT_EXCEEDED');
    // One action drains in 100 s at 0.01 a second.
    assert.ok(body.retry_after_ms > 90_000 && body.retry_after_ms <= 100_000, String(body.retry_after_ms));
    assert.equal(res.headers.get('retry-after'), String(Math.ceil(body.retry_after_ms / 1000)));
    // The line is written as the response finishes, which may be just after the client has it.
    await eventually(() => lines.some((l) => l['statusCode'] === 429), 'a log line for the 429');
    const refused = lines.filter((l) => l['statusCode'] === 429);
    assert.equal(refused.length, 1, JSON.stringify(lines));
    assert.deepEqual(
      { level: refused[0]!['level'], limit: refused[0]!['limit'], user: refused[0]!['user'], errcode: refused[0]!['errcode'] },
      { level: 30, limit: 'message', user: '@alice:hs', errcode: 'M_LIMIT_EXCEEDED' },
    );
  });

  test('failed requests give their place back; unlimited routes and admins are never limited', async () => {
    for (let i = 0; i < 10; i++) {
      assert.equal((await put('/fail', 'admin')).status, 403);
      assert.equal((await put('/free', 'alice')).status, 200);
      assert.equal((await put('/send', 'admin')).status, 200);
    }
    // Alice's bucket is full (the test before); her failures still answer their own error.
    assert.equal((await put('/fail', 'alice')).status, 429);
  });

  test('unauthenticated routes are counted per address', async () => {
    const login = () => fetch(`${base}/login`, { method: 'POST', body: '{"type":"m.login.token","token":"t"}' });
    for (let i = 0; i < 3; i++) assert.equal((await login()).status, 200);
    const earlier = lines.length;
    const res = await login();
    assert.equal(res.status, 429);
    await eventually(() => lines.slice(earlier).some((l) => l['statusCode'] === 429), 'a log line for the 429');
    const line = lines.findLast((l) => l['statusCode'] === 429);
    assert.equal(line?.['limit'], 'login.address');
    assert.equal(line?.['client'], '127.0.0.1');
  });
});
