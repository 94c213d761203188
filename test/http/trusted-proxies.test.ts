// global.trusted_proxies on a real server: behind a trusted proxy the X-Forwarded-For client is
// the one whose login attempts are counted and whose address the device records; without the
// setting the header changes nothing.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { HttpClient, type HttpReply } from '../support/http-client.js';
import { serverBackends, useTestServer, type TestServer, type TestUser } from '../support/server.js';

/** A login that fails (no such user): it counts against the address only. */
function badLogin(hs: TestServer, n: number, forwardedFor?: string): Promise<HttpReply> {
  return new HttpClient(hs.baseUrl).post(
    '/login',
    { type: 'm.login.password', identifier: { type: 'm.id.user', user: `nobody-${n}` }, password: 'x' },
    { headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } },
  );
}

/** The address the server recorded for the user's device, once its last-seen write has landed. */
async function lastSeenIp(hs: TestServer, user: TestUser, forwardedFor?: string): Promise<string | undefined> {
  const http = new HttpClient(hs.baseUrl, { token: user.accessToken });
  const headers: Record<string, string> = forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor };
  let seen: string | undefined;
  await eventually(async () => {
    const res = await http.get(`/devices/${user.deviceId}`, { headers });
    assert.equal(res.status, 200);
    seen = (res.body as { last_seen_ip?: string }).last_seen_ip;
    return seen !== undefined;
  }, 'a last-seen address for the device');
  return seen;
}

const LIMITS = { enabled: true, login: { address: { per_second: 0.001, burst_count: 2 } } };

for (const { backend, skip } of await serverBackends()) {
  describe(`behind a trusted proxy on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { global: { trusted_proxies: ['127.0.0.1', '10.0.0.0/8'] }, client_api: { rate_limiting: LIMITS } } });

    test('each forwarded client has its own login bucket; the proxy itself has another', async () => {
      for (let i = 0; i < 2; i++) assert.equal((await badLogin(hs, i, '203.0.113.1')).status, 403);
      assert.equal((await badLogin(hs, 2, '203.0.113.1')).status, 429);
      // The same client through a second trusted hop, and a forged entry to its left.
      assert.equal((await badLogin(hs, 3, '198.51.100.77, 203.0.113.1, 10.1.1.1')).status, 429);
      assert.equal((await badLogin(hs, 4, '203.0.113.2')).status, 403);
      assert.equal((await badLogin(hs, 5)).status, 403, 'no header: the peer is the client');
    });

    test("the device records the forwarded client's address", async () => {
      const user = await hs.registerUser('proxied', 'proxied-pw');
      assert.equal(await lastSeenIp(hs, user, '2001:db8::5, 10.0.0.2'), '2001:db8::5');
    });
  });

  describe(`without trusted proxies on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { rate_limiting: LIMITS } } });

    test('X-Forwarded-For is ignored: forging it does not buy another login bucket', async () => {
      assert.equal((await badLogin(hs, 0, '203.0.113.1')).status, 403);
      assert.equal((await badLogin(hs, 1, '203.0.113.2')).status, 403);
      assert.equal((await badLogin(hs, 2, '203.0.113.3')).status, 429);
    });

    test('the device records the peer address', async () => {
      const user = await hs.registerUser('direct', 'direct-pw');
      assert.equal(await lastSeenIp(hs, user, '203.0.113.9'), '127.0.0.1');
    });
  });
}
