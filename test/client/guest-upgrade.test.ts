// A guest upgrades to a full account by registering its own numeric localpart with its access
// token (spec: guest access; `guest_access_token` in the body, or the Authorization header).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, useTestServer } from '../support/server.js';

const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`guest upgrade over HTTP on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });

    async function guest(): Promise<{ userId: string; localpart: string; token: string }> {
      const r = await request(hs.baseUrl, 'POST', `${V3}/register?kind=guest`, {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const userId: string = r.body['user_id'];
      return { userId, localpart: userId.slice(1, userId.indexOf(':')), token: r.body['access_token'] };
    }

    const whoami = (token: string) => request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, { token });

    test('guest_access_token in the body: UIA as usual, then the same user ID with a password, no longer a guest', async () => {
      const g = await guest();
      const body = { username: g.localpart, password: 'upgraded pw', guest_access_token: g.token, initial_device_display_name: 'Laptop' };
      const first = await request(hs.baseUrl, 'POST', `${V3}/register`, body);
      assert.equal(first.status, 401, JSON.stringify(first.body));
      const done = await request(hs.baseUrl, 'POST', `${V3}/register`, { ...body, auth: { type: 'm.login.dummy', session: first.body['session'] } });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body['user_id'], g.userId);
      assert.equal(typeof done.body['access_token'], 'string');

      const who = await whoami(done.body['access_token']);
      assert.deepEqual(who.body, { user_id: g.userId, device_id: done.body['device_id'], is_guest: false });
      // The guest's own token now speaks for the full account too.
      assert.equal((await whoami(g.token)).body['is_guest'], false);
      const devices = await request(hs.baseUrl, 'GET', `${V3}/devices`, undefined, { token: g.token });
      assert.equal(devices.status, 200, JSON.stringify(devices.body));

      const login = await request(hs.baseUrl, 'POST', `${V3}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user: g.localpart }, password: 'upgraded pw' });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      assert.equal(login.body['user_id'], g.userId);

      // Once upgraded, the token is no guest's: another upgrade is refused.
      const again = await request(hs.baseUrl, 'POST', `${V3}/register`, { ...body, auth: { type: 'm.login.dummy' } });
      assert.deepEqual([again.status, again.body['errcode']], [403, 'M_FORBIDDEN']);
    });

    test('the guest token in the Authorization header with the guest\'s own username upgrades too (r0)', async () => {
      const g = await guest();
      const done = await request(
        hs.baseUrl,
        'POST',
        '/_matrix/client/r0/register',
        { username: g.localpart, password: 'pw', auth: { type: 'm.login.dummy' } },
        { token: g.token },
      );
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body['user_id'], g.userId);
      assert.equal((await whoami(done.body['access_token'])).body['is_guest'], false);
    });

    test('inhibit_login upgrades without a new login', async () => {
      const g = await guest();
      const done = await request(hs.baseUrl, 'POST', `${V3}/register`, {
        username: g.localpart,
        password: 'pw',
        guest_access_token: g.token,
        inhibit_login: true,
        auth: { type: 'm.login.dummy' },
      });
      assert.deepEqual(done.body, { user_id: g.userId, home_server: hs.serverName });
      assert.equal((await whoami(g.token)).body['is_guest'], false);
    });

    test('refusals: numeric names without a guest token, another guest\'s name, a non-guest token, no username', async () => {
      const g = await guest();
      const other = await guest();
      const alice = await hs.registerUser('alice', 'pw');
      const attempt = (body: Record<string, unknown>, token?: string) =>
        request(hs.baseUrl, 'POST', `${V3}/register`, { password: 'pw', auth: { type: 'm.login.dummy' }, ...body }, token !== undefined ? { token } : {});

      const numeric = await attempt({ username: g.localpart });
      assert.deepEqual([numeric.status, numeric.body['errcode']], [400, 'M_INVALID_USERNAME']);
      const someoneElse = await attempt({ username: other.localpart, guest_access_token: g.token });
      assert.deepEqual([someoneElse.status, someoneElse.body['errcode']], [403, 'M_FORBIDDEN']);
      // In the header, another guest's token is simply not taken as an upgrade.
      const headerOther = await attempt({ username: other.localpart }, g.token);
      assert.deepEqual([headerOther.status, headerOther.body['errcode']], [400, 'M_INVALID_USERNAME']);
      const notGuest = await attempt({ username: g.localpart, guest_access_token: alice.accessToken });
      assert.deepEqual([notGuest.status, notGuest.body['errcode']], [403, 'M_FORBIDDEN']);
      const bogus = await attempt({ username: g.localpart, guest_access_token: 'not-a-token' });
      assert.deepEqual([bogus.status, bogus.body['errcode']], [403, 'M_FORBIDDEN']);
      const noName = await attempt({ guest_access_token: g.token });
      assert.deepEqual([noName.status, noName.body['errcode']], [400, 'M_MISSING_PARAM']);

      for (const who of [g, other]) assert.equal((await whoami(who.token)).body['is_guest'], true);
      // A full account's token in the header does not get in the way of an ordinary registration.
      const carol = await attempt({ username: 'carol' }, alice.accessToken);
      assert.equal(carol.status, 200, JSON.stringify(carol.body));
      assert.equal(carol.body['user_id'], `@carol:${hs.serverName}`);
    });
  });
}
