// Upload rate limits on a real server over real sockets, both storage backends: `POST /upload`,
// `POST /v1/create` and `PUT /upload/{serverName}/{mediaId}` share one bucket per user
// (client_api.rate_limiting.media_create), every attempt counted; beyond the burst 429
// M_LIMIT_EXCEEDED with retry_after_ms. Listed users, admins and users with an override of 0 and
// 0 are not limited. The cap on ids made with /create and not uploaded to (max_pending_uploads).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`upload rate limits (${backend})`, { skip }, () => {
    let hs: TestServer;
    let admin: TestUser;

    const upload = async (user: TestUser) => {
      const res = await fetch(`${hs.baseUrl}/_chat/media/v3/upload`, {
        method: 'POST',
        headers: { ...hs.auth(user), 'content-type': 'text/plain' },
        body: 'x',
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const create = async (user: TestUser) => {
      const res = await fetch(`${hs.baseUrl}/_chat/media/v1/create`, { method: 'POST', headers: hs.auth(user) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const uploadTo = async (user: TestUser, uri: unknown) => {
      const path = String(uri).slice('mxc://'.length);
      const res = await fetch(`${hs.baseUrl}/_chat/media/v3/upload/${path}`, {
        method: 'PUT',
        headers: { ...hs.auth(user), 'content-type': 'text/plain' },
        body: 'y',
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const assertLimited = (r: { status: number; body: Record<string, unknown> }) => {
      assert.equal(r.status, 429, JSON.stringify(r.body));
      assert.equal(r.body['errcode'], 'M_LIMIT_EXCEEDED');
      const retry = r.body['retry_after_ms'];
      // One action drains in 100 s at 0.01 a second.
      assert.ok(typeof retry === 'number' && retry > 90_000 && retry <= 100_000, String(retry));
    };

    before(async () => {
      hs = await startTestServer({
        backend,
        config: {
          client_api: {
            rate_limiting: { enabled: true, exempt_user_ids: ['@carol:localhost'], media_create: { per_second: 0.01, burst_count: 3 } },
          },
          media_api: { max_pending_uploads: 3 },
        },
      });
      admin = await hs.registerUser('root', 'root-pw', { admin: true });
    });
    after(async () => {
      await hs?.close();
    });

    test('uploads beyond the burst: 429 M_LIMIT_EXCEEDED with retry_after_ms; other users keep their own bucket', async () => {
      const alice = await hs.registerUser('alice', 'alice-pw');
      for (let i = 0; i < 3; i++) assert.equal((await upload(alice)).status, 200);
      assertLimited(await upload(alice));
      assertLimited(await create(alice));
      const dora = await hs.registerUser('dora', 'dora-pw');
      assert.equal((await upload(dora)).status, 200);
    });

    test('/create and the upload to its id count in the same bucket, refused attempts too', async () => {
      const bob = await hs.registerUser('bob', 'bob-pw');
      const made = await create(bob);
      assert.equal(made.status, 200);
      assert.equal((await uploadTo(bob, made.body['content_uri'])).status, 200);
      // A refused upload (uploaded already) still counts: the third and last.
      assert.equal((await uploadTo(bob, made.body['content_uri'])).status, 409);
      const limited = await fetch(`${hs.baseUrl}/_chat/media/v3/upload/${String(made.body['content_uri']).slice(6)}`, {
        method: 'PUT',
        headers: { ...hs.auth(bob), 'content-type': 'text/plain' },
        body: 'z',
      });
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), String(Math.ceil(((await limited.json()) as { retry_after_ms: number }).retry_after_ms / 1000)));
      assertLimited(await create(bob));
    });

    test('listed users, admins and users overridden with 0 and 0 are not limited', async () => {
      const carol = await hs.registerUser('carol', 'carol-pw');
      const erin = await hs.registerUser('erin', 'erin-pw');
      const set = await fetch(`${hs.baseUrl}/_synapse/admin/v1/users/${encodeURIComponent(erin.userId)}/override_ratelimit`, {
        method: 'POST',
        headers: hs.auth(admin),
        body: '{"messages_per_second":0,"burst_count":0}',
      });
      assert.equal(set.status, 200);
      for (const user of [carol, admin, erin]) {
        for (let i = 0; i < 6; i++) assert.equal((await upload(user)).status, 200, user.userId);
      }
    });

    test('media_api.max_pending_uploads still holds for users the rate limit lets through', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await create(admin)).status);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    });
  });
}
