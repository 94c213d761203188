// Endpoints clients call for features this server does not offer answer as an unconfigured
// Synapse does, for logged-in users, under r0 and v3.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';

const ANSWERS: [string, number, unknown][] = [
  ['/account/3pid', 200, { threepids: [] }],
  ['/thirdparty/protocols', 200, {}],
  ['/voip/turnServer', 200, {}],
  ['/pushers', 200, { pushers: [] }],
  ['/notifications', 200, { notifications: [] }],
];

for (const { backend, skip } of await serverBackends()) {
  describe(`answers for features not offered, on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });
    let alice: TestUser;
    before(async () => {
      alice = await hs.registerUser('alice', 'pw');
    });

    for (const [path, status, body] of ANSWERS) {
      test(`GET ${path}: ${status}`, async () => {
        for (const prefix of ['/_matrix/client/v3', '/_matrix/client/r0', '/_chat/client/v3']) {
          const r = await request(hs.baseUrl, 'GET', prefix + path, undefined, { token: alice.accessToken });
          assert.deepEqual([r.status, r.body], [status, body], prefix + path);
        }
        const anonymous = await request(hs.baseUrl, 'GET', `/_matrix/client/v3${path}`);
        assert.deepEqual([anonymous.status, anonymous.body['errcode']], [401, 'M_MISSING_TOKEN']);
      });
    }

    test('guests are refused, as on other user routes', async () => {
      const guest = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/register?kind=guest', {});
      const r = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/pushers', undefined, { token: guest.body['access_token'] });
      assert.deepEqual([r.status, r.body['errcode']], [403, 'M_GUEST_ACCESS_FORBIDDEN']);
    });
  });
}
