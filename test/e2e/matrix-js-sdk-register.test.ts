// matrix-js-sdk registers against a real server over /_matrix/, on SQLite and PostgreSQL: its
// registerRequest with the account's parameters is answered with a UIA challenge, and the
// follow-up carrying only `auth` completes the registration; so does register() as the follow-up,
// which sends refresh_token with it. The new accounts then log in and sync with the SDK.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as sdk from 'matrix-js-sdk';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';
import { type SdkClient, loginClient, startAndPrepare } from './support/sdk.js';

/** The UIA challenge a registration request is answered with. */
async function challenge(request: Promise<unknown>): Promise<{ session: string; flows: { stages: string[] }[] }> {
  const err = await request.then(
    (reply) => assert.fail(`expected a 401 challenge, got ${JSON.stringify(reply)}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof sdk.MatrixError, String(err));
  assert.equal(err.httpStatus, 401);
  return err.data as unknown as { session: string; flows: { stages: string[] }[] };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`matrix-js-sdk registration on ${backend}`, { skip }, () => {
    let hs: TestServer;
    let anonymous: sdk.MatrixClient;
    const started: SdkClient[] = [];

    before(async () => {
      hs = await startTestServer({ backend });
      anonymous = sdk.createClient({ baseUrl: hs.baseUrl });
    });
    after(async () => {
      for (const c of started) c.client.stopClient();
      anonymous?.stopClient();
      await hs?.close();
    });

    test('registerRequest, then the follow-up with only auth', async () => {
      const params = { username: 'nora', password: 'nora-pw', initial_device_display_name: 'Nora via the SDK' };
      const first = await challenge(anonymous.registerRequest(params));
      assert.ok(first.flows.some((f) => f.stages.length === 1 && f.stages[0] === 'm.login.dummy'));
      const done = await anonymous.registerRequest({ auth: { type: 'm.login.dummy', session: first.session } });
      assert.equal(done.user_id, '@nora:localhost');
      assert.equal(typeof done.access_token, 'string');
      assert.equal(typeof done.device_id, 'string');
      // The same follow-up again: the same account, logged in once more.
      const again = await anonymous.registerRequest({ auth: { type: 'm.login.dummy', session: first.session } });
      assert.equal(again.user_id, done.user_id);
      assert.notEqual(again.access_token, done.access_token);

      const registered = sdk.createClient({ baseUrl: hs.baseUrl, userId: done.user_id, accessToken: done.access_token!, deviceId: done.device_id! });
      const { devices } = await registered.getDevices();
      assert.deepEqual(devices.find((d) => d.device_id === done.device_id)?.display_name, 'Nora via the SDK');
    });

    test('register() as the follow-up, which adds refresh_token to the request', async () => {
      const first = await challenge(anonymous.registerRequest({ username: 'olga', password: 'olga-pw', refresh_token: true }));
      // The SDK leaves out the parameters given as null: this request is auth and refresh_token only.
      const none = null as unknown as string;
      const done = await anonymous.register(none, none, first.session, { type: 'm.login.dummy' });
      assert.equal(done.user_id, '@olga:localhost');
      assert.equal(done.refresh_token, undefined, 'this server issues no refresh tokens');
    });

    test('the new accounts log in with their passwords and sync', async () => {
      for (const [user, password] of [['nora', 'nora-pw'], ['olga', 'olga-pw']]) {
        const c = await loginClient(hs.baseUrl, { identifier: { type: 'm.id.user', user: user! }, password: password! });
        started.push(c);
        assert.equal(c.userId, `@${user}:localhost`);
        await startAndPrepare(c);
        assert.deepEqual(c.exchanges.filter((e) => e.status >= 400), [], `${c.userId}'s failed requests`);
      }
    });
  });
}
