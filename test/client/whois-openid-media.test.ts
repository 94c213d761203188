// GET /admin/whois/{userId}, OpenID tokens (the client request and the federation userinfo check)
// and the media configuration, over HTTP on SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, type TestServer, type TestUser, useTestServer } from '../support/server.js';
import { OpenIdService } from '../../src/users/openid.js';

const V3 = '/_matrix/client/v3';
const enc = encodeURIComponent;

/** Reads whois until `ready` holds of it (the last-seen write does not hold up the request). */
async function whoisWhen(hs: TestServer, asker: TestUser, userId: string, ready: (body: any) => boolean): Promise<any> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const r = await request(hs.baseUrl, 'GET', `${V3}/admin/whois/${enc(userId)}`, undefined, { token: asker.accessToken });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (ready(r.body)) return r.body;
    if (Date.now() > deadline) throw new Error(`whois never became ready: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

for (const { backend, skip } of await serverBackends()) {
  describe(`whois on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: TestUser;
    let bob: TestUser;
    let admin: TestUser;
    before(async () => {
      alice = await hs.registerUser('alice', 'secret');
      bob = await hs.registerUser('bob', 'secret');
      admin = await hs.registerUser('root', 'secret', { admin: true });
    });

    test('a user sees where each of their devices was last seen from, with its user agent', async () => {
      // The first request with the token records the device as seen.
      const first = await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, { token: alice.accessToken, headers: { 'user-agent': 'HearthTest/1.0 (whois)' } });
      assert.equal(first.status, 200);
      // A second login that has made no request yet.
      const idle = await hs.server.services.accounts.login({ type: 'm.login.password', identifier: { identifier: { type: 'm.id.user', user: alice.userId } }, password: 'secret' });
      const body = await whoisWhen(hs, alice, alice.userId, (b) => b.devices[alice.deviceId]?.sessions[0].connections.length === 1);
      assert.equal(body.user_id, alice.userId);
      assert.deepEqual(Object.keys(body.devices).sort(), [alice.deviceId, idle.deviceId].sort());
      const [connection] = body.devices[alice.deviceId].sessions[0].connections;
      assert.equal(connection.user_agent, 'HearthTest/1.0 (whois)');
      assert.match(connection.ip, /127\.0\.0\.1/);
      assert.equal(typeof connection.last_seen, 'number');
      assert.deepEqual(body.devices[idle.deviceId], { sessions: [{ connections: [] }] });
    });

    test('others are for server admins only; unknown and remote users are refused', async () => {
      const denied = await request(hs.baseUrl, 'GET', `${V3}/admin/whois/${enc(alice.userId)}`, undefined, { token: bob.accessToken });
      assert.deepEqual([denied.status, denied.body.errcode], [403, 'M_FORBIDDEN']);
      const allowed = await whoisWhen(hs, admin, alice.userId, () => true);
      assert.equal(allowed.user_id, alice.userId);
      for (const prefix of ['/_chat/client/r0', '/_matrix/client/r0', '/_synapse/admin/v1', '/_ext/admin/v1']) {
        const path = prefix.endsWith('admin/v1') ? `${prefix}/whois/${enc(alice.userId)}` : `${prefix}/admin/whois/${enc(alice.userId)}`;
        const r = await request(hs.baseUrl, 'GET', path, undefined, { token: admin.accessToken });
        assert.deepEqual([r.status, r.body.user_id], [200, alice.userId], path);
      }
      const self = await request(hs.baseUrl, 'GET', `/_synapse/admin/v1/whois/${enc(bob.userId)}`, undefined, { token: bob.accessToken });
      assert.equal(self.status, 200);
      const cases: [string, number, string][] = [
        ['@nobody:localhost', 404, 'M_NOT_FOUND'],
        ['@someone:elsewhere.example', 400, 'M_UNKNOWN'],
        ['not-a-user-id', 400, 'M_INVALID_PARAM'],
      ];
      for (const [userId, status, errcode] of cases) {
        const r = await request(hs.baseUrl, 'GET', `${V3}/admin/whois/${enc(userId)}`, undefined, { token: admin.accessToken });
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], userId);
      }
      const anonymous = await request(hs.baseUrl, 'GET', `${V3}/admin/whois/${enc(alice.userId)}`);
      assert.deepEqual([anonymous.status, anonymous.body.errcode], [401, 'M_MISSING_TOKEN']);
    });
  });

  describe(`OpenID tokens on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      alice = await hs.registerUser('alice', 'secret');
      bob = await hs.registerUser('bob', 'secret');
    });
    const requestToken = (u: TestUser, userId: string, prefix = V3) => request(hs.baseUrl, 'POST', `${prefix}/user/${enc(userId)}/openid/request_token`, {}, { token: u.accessToken });
    const userinfo = (token?: string, root = '/_matrix') =>
      request(hs.baseUrl, 'GET', `${root}/federation/v1/openid/userinfo${token === undefined ? '' : `?access_token=${enc(token)}`}`);

    test('a token for oneself names its owner to the federation userinfo check', async () => {
      for (const prefix of [V3, '/_chat/client/r0']) {
        const r = await requestToken(alice, alice.userId, prefix);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual({ ...r.body, access_token: typeof r.body.access_token }, { access_token: 'string', token_type: 'Bearer', matrix_server_name: hs.serverName, expires_in: 3600 });
        for (const root of ['/_matrix', '/_chat']) {
          const info = await userinfo(r.body.access_token, root);
          assert.deepEqual([info.status, info.body], [200, { sub: alice.userId }]);
        }
      }
    });

    test('only for oneself; the body must be JSON', async () => {
      const r = await requestToken(bob, alice.userId);
      assert.deepEqual([r.status, r.body.errcode], [403, 'M_FORBIDDEN']);
      const notJson = await request(hs.baseUrl, 'POST', `${V3}/user/${enc(alice.userId)}/openid/request_token`, undefined, { token: alice.accessToken, rawBody: 'x' });
      assert.deepEqual([notJson.status, notJson.body.errcode], [400, 'M_NOT_JSON']);
    });

    test('an OpenID token is not an access token, nor an access token an OpenID token', async () => {
      const { access_token: token } = (await requestToken(alice, alice.userId)).body;
      const whoami = await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, { token });
      assert.deepEqual([whoami.status, whoami.body.errcode], [401, 'M_UNKNOWN_TOKEN']);
      const info = await userinfo(alice.accessToken);
      assert.deepEqual([info.status, info.body.errcode], [401, 'M_UNKNOWN_TOKEN']);
    });

    test('missing, unknown, expired tokens and those of deactivated accounts are 401', async () => {
      const missing = await userinfo();
      assert.deepEqual([missing.status, missing.body.errcode], [401, 'M_MISSING_TOKEN']);
      const unknown = await userinfo('hto_nothing');
      assert.deepEqual([unknown.status, unknown.body.errcode], [401, 'M_UNKNOWN_TOKEN']);
      // A token made two hours ago, by the same service over the same database.
      const past = new OpenIdService({ db: hs.server.core.db, serverName: hs.serverName, now: () => Date.now() - 2 * 3600_000 });
      const expired = await userinfo((await past.requestToken(alice.userId, alice.userId)).access_token);
      assert.deepEqual([expired.status, expired.body.errcode], [401, 'M_UNKNOWN_TOKEN']);

      const carol = await hs.registerUser('carol', 'secret');
      const { access_token: token } = (await requestToken(carol, carol.userId)).body;
      assert.equal((await userinfo(token)).status, 200);
      await hs.server.services.accounts.deactivateUser(carol.userId);
      const gone = await userinfo(token);
      assert.deepEqual([gone.status, gone.body.errcode], [401, 'M_UNKNOWN_TOKEN']);
    });
  });

  describe(`media configuration on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { media_api: { max_file_size_bytes: '10mb' } } });
    const unlimited = useTestServer({ backend, config: { media_api: { max_file_size_bytes: 0 } } });
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      alice = await hs.registerUser('alice', 'secret');
      bob = await unlimited.registerUser('bob', 'secret');
    });
    const paths = ['/_matrix/media/v3/config', '/_matrix/media/r0/config', '/_chat/media/v1/config', '/_chat/client/v1/media/config', '/_matrix/client/v1/media/config'];

    test('the largest upload, from media_api.max_file_size_bytes, under every prefix', async () => {
      for (const path of paths) {
        const r = await request(hs.baseUrl, 'GET', path, undefined, { token: alice.accessToken });
        assert.deepEqual([r.status, r.body], [200, { 'm.upload.size': hs.config.media_api.max_file_size_bytes }], path);
        assert.equal(r.body['m.upload.size'], 10 * 1024 * 1024);
        const anonymous = await request(hs.baseUrl, 'GET', path);
        assert.deepEqual([anonymous.status, anonymous.body.errcode], [401, 'M_MISSING_TOKEN'], path);
      }
    });

    test('no limit configured: the size is left out', async () => {
      const r = await request(unlimited.baseUrl, 'GET', '/_matrix/media/v3/config', undefined, { token: bob.accessToken });
      assert.deepEqual([r.status, r.body], [200, {}]);
    });
  });
}
