// User-interactive auth on a real server, on SQLite and PostgreSQL, answering as Synapse does:
// another user's valid password on a protected route is 403 M_FORBIDDEN with nothing changed, and
// a registration session keeps its first request's parameters (and password) so that a follow-up
// carrying only `auth` completes it, and the completed request repeated logs the account in again.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer, type TestServer } from '../support/server.js';
import { HttpClient } from '../support/http-client.js';
import type { Reply } from '../sync/sync-client.js';

function call(hs: TestServer, method: string, path: string, body?: unknown, token?: string): Promise<Reply> {
  return new HttpClient(hs.baseUrl).request(method, path, body, token !== undefined ? { token } : {});
}

function expectError(r: Reply, status: number, errcode: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.errcode, errcode, JSON.stringify(r.body));
}

const dummy = (session: string) => ({ type: 'm.login.dummy', session });

for (const { backend, skip } of await serverBackends()) {
  describe(`user-interactive auth over HTTP on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let n = 0;
    /** A new account (password "pw-<name>") logged in on `devices` devices besides the one registerUser makes. */
    const account = async (name: string, devices = 1) => {
      const localpart = `${name}${++n}`;
      const password = `pw-${localpart}`;
      await hs.registerUser(localpart, password);
      const logins: { token: string; deviceId: string }[] = [];
      for (let i = 0; i < devices; i++) {
        const r = await call(hs, 'POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: localpart }, password });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        logins.push({ token: r.body.access_token, deviceId: r.body.device_id });
      }
      return { localpart, userId: `@${localpart}:${hs.serverName}`, password, logins };
    };
    const deviceIds = async (token: string) =>
      ((await call(hs, 'GET', '/devices', undefined, token)).body.devices as { device_id: string }[]).map((d) => d.device_id).sort();
    const canLogIn = async (user: string, password: string) =>
      (await call(hs, 'POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user }, password })).status === 200;

    describe("another user's password", () => {
      test('DELETE /devices/{deviceId} and POST /delete_devices: 403 M_FORBIDDEN, nothing deleted', async () => {
        const alice = await account('alice', 3);
        const bob = await account('bob', 0);
        const [main, second, third] = alice.logins;
        const before = await deviceIds(main!.token);
        assert.equal(before.length, 4);
        // Every way of naming the other user, with and without a session begun first.
        const asBob = [
          { type: 'm.login.password', identifier: { type: 'm.id.user', user: bob.userId }, password: bob.password },
          { type: 'm.login.password', identifier: { type: 'm.id.user', user: bob.localpart }, password: bob.password },
          { type: 'm.login.password', user: bob.localpart, password: bob.password },
        ];
        for (const auth of asBob) {
          expectError(await call(hs, 'DELETE', `/devices/${second!.deviceId}`, { auth }, main!.token), 403, 'M_FORBIDDEN');
          expectError(await call(hs, 'POST', '/delete_devices', { devices: [second!.deviceId, third!.deviceId], auth }, main!.token), 403, 'M_FORBIDDEN');
          const started = await call(hs, 'DELETE', `/devices/${third!.deviceId}`, {}, main!.token);
          assert.equal(started.status, 401);
          const r = await call(hs, 'DELETE', `/devices/${third!.deviceId}`, { auth: { ...auth, session: started.body.session } }, main!.token);
          expectError(r, 403, 'M_FORBIDDEN');
          assert.equal(r.body.flows, undefined, 'no challenge to retry: the credentials are not this account\'s');
        }
        assert.deepEqual(await deviceIds(main!.token), before);
        assert.equal((await call(hs, 'GET', '/account/whoami', undefined, second!.token)).status, 200);

        // Bob's wrong password is an ordinary failed attempt; alice's own then works in the same session.
        const started = await call(hs, 'POST', '/delete_devices', { devices: [second!.deviceId] }, main!.token);
        const session = started.body.session as string;
        const wrong = await call(hs, 'POST', '/delete_devices', { devices: [second!.deviceId], auth: { ...asBob[0], password: 'nope', session } }, main!.token);
        expectError(wrong, 401, 'M_FORBIDDEN');
        assert.deepEqual(wrong.body.completed, []);
        expectError(await call(hs, 'POST', '/delete_devices', { devices: [second!.deviceId], auth: { ...asBob[0], session } }, main!.token), 403, 'M_FORBIDDEN');
        const own = { type: 'm.login.password', identifier: { type: 'm.id.user', user: alice.userId }, password: alice.password, session };
        assert.equal((await call(hs, 'POST', '/delete_devices', { devices: [second!.deviceId], auth: own }, main!.token)).status, 200);
        assert.deepEqual(await deviceIds(main!.token), before.filter((d) => d !== second!.deviceId));
      });

      test('POST /account/password and /account/deactivate: 403 M_FORBIDDEN, nothing changed', async () => {
        const carol = await account('carol', 2);
        const dave = await account('dave', 0);
        const [main, other] = carol.logins;
        const asDave = { type: 'm.login.password', identifier: { type: 'm.id.user', user: dave.userId }, password: dave.password };
        expectError(await call(hs, 'POST', '/account/password', { new_password: 'stolen', auth: asDave }, main!.token), 403, 'M_FORBIDDEN');
        expectError(await call(hs, 'POST', '/account/deactivate', { auth: asDave }, main!.token), 403, 'M_FORBIDDEN');
        expectError(await call(hs, 'POST', '/account/deactivate', { erase: true, auth: asDave }, main!.token), 403, 'M_FORBIDDEN');
        assert.equal(await canLogIn(carol.localpart, carol.password), true);
        assert.equal(await canLogIn(carol.localpart, 'stolen'), false);
        assert.equal(await canLogIn(dave.localpart, dave.password), true);
        for (const login of [main!, other!]) assert.equal((await call(hs, 'GET', '/account/whoami', undefined, login.token)).status, 200);
      });
    });

    describe('registration sessions', () => {
      test("a follow-up with only auth completes the first request's registration", async () => {
        const first = await call(hs, 'POST', '/register', { username: 'Erin', password: 'erin-pw', device_id: 'ERINPHONE', initial_device_display_name: 'Erin phone' });
        assert.equal(first.status, 401);
        const done = await call(hs, 'POST', '/register', { auth: dummy(first.body.session) });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal(done.body.user_id, `@erin:${hs.serverName}`);
        assert.equal(done.body.device_id, 'ERINPHONE');
        const devices = (await call(hs, 'GET', '/devices', undefined, done.body.access_token)).body.devices;
        assert.deepEqual(devices.map((d: any) => [d.device_id, d.display_name]), [['ERINPHONE', 'Erin phone']]);
        assert.equal(await canLogIn('erin', 'erin-pw'), true, 'the password given first');

        // The completed request again: the same account, logged in afresh on the remembered device.
        const again = await call(hs, 'POST', '/register', { auth: dummy(first.body.session) });
        assert.equal(again.status, 200, JSON.stringify(again.body));
        assert.equal(again.body.user_id, done.body.user_id);
        assert.equal(again.body.device_id, 'ERINPHONE');
        assert.notEqual(again.body.access_token, done.body.access_token);
        const full = await call(hs, 'POST', '/register', {
          username: 'Erin', password: 'erin-pw', device_id: 'ERINPHONE', initial_device_display_name: 'Erin phone', auth: dummy(first.body.session),
        });
        assert.equal(full.status, 200, JSON.stringify(full.body));
        assert.equal(full.body.user_id, done.body.user_id);
        // Each is a login on that device, which replaces the device's earlier token.
        assert.equal((await call(hs, 'GET', '/account/whoami', undefined, full.body.access_token)).body.user_id, done.body.user_id);
        expectError(await call(hs, 'GET', '/account/whoami', undefined, done.body.access_token), 401, 'M_UNKNOWN_TOKEN');
      });

      test('parameters given again replace those given first, until the account exists', async () => {
        const first = await call(hs, 'POST', '/register', { username: 'frank', password: 'frank-pw', device_id: 'FRANKDEV' });
        const session = first.body.session as string;
        // No stage completed yet: a request with new parameters replaces the kept ones.
        const changed = await call(hs, 'POST', '/register', { username: 'franklin' });
        assert.equal(changed.status, 401);
        const moved = await call(hs, 'POST', '/register', { username: 'franklin', auth: { session } });
        assert.equal(moved.status, 401);
        assert.deepEqual(moved.body.completed, []);
        const done = await call(hs, 'POST', '/register', { auth: dummy(session) });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal(done.body.user_id, `@franklin:${hs.serverName}`, 'the parameters given last');
        assert.notEqual(done.body.device_id, 'FRANKDEV', 'replaced, not merged');
        assert.equal(await canLogIn('franklin', 'frank-pw'), true, 'the password kept from the first request');
        assert.equal((await call(hs, 'GET', `/register/available?username=frank`)).status, 200, 'frank was never registered');

        // Once the account exists, another name is refused (as Synapse answers), free or taken...
        expectError(await call(hs, 'POST', '/register', { username: 'frankie', password: 'x-pw', auth: dummy(session) }), 400, 'M_UNKNOWN');
        await hs.registerUser('george', 'george-pw');
        expectError(await call(hs, 'POST', '/register', { username: 'george', password: 'x-pw', auth: dummy(session) }), 400, 'M_UNKNOWN');
        assert.equal((await call(hs, 'GET', `/register/available?username=frankie`)).status, 200);
        // ...while its own name (in any case), or none, logs it in again; a new password changes nothing.
        for (const body of [{ username: 'Franklin', password: 'x-pw' }, { password: 'x-pw' }, {}]) {
          const r = await call(hs, 'POST', '/register', { ...body, auth: dummy(session) });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.user_id, done.body.user_id);
        }
        assert.equal(await canLogIn('franklin', 'frank-pw'), true);
        assert.equal(await canLogIn('franklin', 'x-pw'), false);
      });

      test('inhibit_login, refresh_token and a device name sent alone are kept as Synapse keeps them', async () => {
        const quiet = await call(hs, 'POST', '/register', { username: 'hana', password: 'hana-pw', inhibit_login: true });
        const quietDone = await call(hs, 'POST', '/register', { auth: dummy(quiet.body.session) });
        assert.deepEqual(quietDone.body, { user_id: `@hana:${hs.serverName}`, home_server: hs.serverName });
        assert.deepEqual(await call(hs, 'POST', '/register', { auth: dummy(quiet.body.session) }), quietDone);

        // matrix-js-sdk sends refresh_token on every request: alone it keeps what was given first.
        const sdkStyle = await call(hs, 'POST', '/register', { username: 'ivan', password: 'ivan-pw', refresh_token: true });
        const sdkDone = await call(hs, 'POST', '/register', { auth: dummy(sdkStyle.body.session), refresh_token: true });
        assert.equal(sdkDone.status, 200, JSON.stringify(sdkDone.body));
        assert.equal(sdkDone.body.user_id, `@ivan:${hs.serverName}`);
        assert.equal(sdkDone.body.refresh_token, undefined, 'this server issues no refresh tokens');
        expectError(await call(hs, 'POST', '/register', { username: 'ivan2', password: 'pw', refresh_token: 'yes' }), 400, 'M_BAD_JSON');

        // A device name without a password is ignored rather than wiping the kept parameters.
        const named = await call(hs, 'POST', '/register', { username: 'jane', password: 'jane-pw', initial_device_display_name: 'Jane laptop' });
        const namedDone = await call(hs, 'POST', '/register', { initial_device_display_name: 'Other', auth: dummy(named.body.session) });
        assert.equal(namedDone.body.user_id, `@jane:${hs.serverName}`);
        const devices = (await call(hs, 'GET', '/devices', undefined, namedDone.body.access_token)).body.devices;
        assert.deepEqual(devices.map((d: any) => d.display_name), ['Jane laptop']);
      });

      test('without a password in any request of the session: 400 M_MISSING_PARAM, no account', async () => {
        const first = await call(hs, 'POST', '/register', { username: 'kim' });
        expectError(await call(hs, 'POST', '/register', { auth: dummy(first.body.session) }), 400, 'M_MISSING_PARAM');
        assert.equal((await call(hs, 'GET', '/register/available?username=kim')).status, 200);
        // A password given later still completes it.
        const done = await call(hs, 'POST', '/register', { password: 'kim-pw', auth: dummy(first.body.session) });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal(done.body.user_id, `@kim:${hs.serverName}`);
      });

      test("a session whose account was deactivated logs it in no more", async () => {
        const first = await call(hs, 'POST', '/register', { username: 'lena', password: 'lena-pw' });
        const done = await call(hs, 'POST', '/register', { auth: dummy(first.body.session) });
        assert.equal(done.status, 200);
        const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'lena' }, password: 'lena-pw' };
        assert.equal((await call(hs, 'POST', '/account/deactivate', { auth }, done.body.access_token)).status, 200);
        expectError(await call(hs, 'POST', '/register', { auth: dummy(first.body.session) }), 403, 'M_USER_DEACTIVATED');
      });
    });
  });
}
