// The token printed at first start makes its account an admin, so it must admit nobody once any
// account exists, however that account came to be.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer, useTestServer } from '../support/server.js';

const V3 = '/_matrix/client/v3';
const VALIDITY = '/_matrix/client/v1/register/m.login.registration_token/validity';

async function validity(hs: TestServer, token: string): Promise<unknown> {
  const r = await request(hs.baseUrl, 'GET', `${VALIDITY}?token=${encodeURIComponent(token)}`);
  assert.equal(r.status, 200);
  return r.body['valid'];
}

function registerWithToken(hs: TestServer, username: string, token: string, session?: string) {
  return request(hs.baseUrl, 'POST', `${V3}/register`, {
    username,
    password: 'pw',
    auth: { type: 'm.login.registration_token', token, ...(session !== undefined ? { session } : {}) },
  });
}

for (const { backend, skip } of await serverBackends()) {
  describe(`the first-start token once accounts exist, on ${backend}`, { skip }, () => {
    const open = useTestServer({ backend });
    const closed = useTestServer({ backend, config: { client_api: { registration_disabled: true } } });

    test('an account registered with m.login.dummy ends it: validity false, the stage fails with 401 M_UNAUTHORIZED', async () => {
      const accounts = open.server.services.accounts;
      const token = await accounts.firstStartToken();
      assert.ok(token);
      assert.equal(await validity(open, token), true);

      const bob = await request(open.baseUrl, 'POST', `${V3}/register`, { username: 'bob', password: 'pw', auth: { type: 'm.login.dummy' } });
      assert.equal(bob.status, 200, JSON.stringify(bob.body));
      assert.equal(await validity(open, token), false);

      const late = await registerWithToken(open, 'mallory', token);
      assert.deepEqual([late.status, late.body['errcode'], late.body['completed']], [401, 'M_UNAUTHORIZED', []]);
      assert.equal(typeof late.body['session'], 'string');
      assert.equal(await accounts.userExists(`@mallory:${open.serverName}`), false);
      assert.equal(await accounts.isAdmin(`@bob:${open.serverName}`), false);
    });

    test('a token that passed the stage before the first account appeared is refused when the registration completes', async () => {
      // A fresh database for this one: the first test left accounts behind.
      const hs = await startTestServer({ backend });
      try {
        const token = await hs.server.services.accounts.firstStartToken();
        assert.ok(token);
        const first = await request(hs.baseUrl, 'POST', `${V3}/register`, { username: 'mallory' });
        const session = first.body['session'];
        // The stage passes (no password yet, so the registration waits).
        const staged = await request(hs.baseUrl, 'POST', `${V3}/register`, { username: 'mallory', auth: { type: 'm.login.registration_token', token, session } });
        assert.equal(staged.body['errcode'], 'M_MISSING_PARAM', JSON.stringify(staged.body));

        await hs.registerUser('alice', 'pw');
        const done = await request(hs.baseUrl, 'POST', `${V3}/register`, { username: 'mallory', password: 'pw', auth: { session } });
        assert.deepEqual([done.status, done.body['errcode'], done.body['completed']], [401, 'M_UNAUTHORIZED', []]);
        assert.equal(await hs.server.services.accounts.userExists(`@mallory:${hs.serverName}`), false);
        assert.equal(await validity(hs, token), false);
      } finally {
        await hs.close();
      }
    });

    test('with registration closed, an account made by the CLI or admin API leaves nothing to register with: 403', async () => {
      const accounts = closed.server.services.accounts;
      const token = await accounts.firstStartToken();
      assert.ok(token);
      assert.equal(await validity(closed, token), true);
      const flows = await request(closed.baseUrl, 'GET', `${V3}/register`);
      assert.deepEqual(flows.body['flows'], [{ stages: ['m.login.registration_token'] }]);

      await closed.registerUser('root', 'pw', { admin: true });
      assert.equal(await validity(closed, token), false);
      const refusedFlows = await request(closed.baseUrl, 'GET', `${V3}/register`);
      assert.deepEqual([refusedFlows.status, refusedFlows.body['errcode']], [403, 'M_FORBIDDEN']);
      const late = await registerWithToken(closed, 'mallory', token);
      assert.deepEqual([late.status, late.body['errcode']], [403, 'M_FORBIDDEN']);
      assert.equal(await accounts.userExists(`@mallory:${closed.serverName}`), false);

      // Another token keeps registration open, but the first-start one still admits nobody.
      await accounts.createRegistrationToken({ token: 'ordinary', usesAllowed: null, expiryTime: null });
      const stillRefused = await registerWithToken(closed, 'mallory', token);
      assert.deepEqual([stillRefused.status, stillRefused.body['errcode']], [401, 'M_UNAUTHORIZED']);
      const ordinary = await registerWithToken(closed, 'dave', 'ordinary');
      assert.equal(ordinary.status, 200, JSON.stringify(ordinary.body));
      assert.equal(await accounts.isAdmin(`@dave:${closed.serverName}`), false);
    });
  });
}
