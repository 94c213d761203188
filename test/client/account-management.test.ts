import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccountService } from '../../src/users/accounts.js';
import { sharedSecretMac } from '../../src/users/shared-secret.js';
import { storageBackends } from '../support/databases.js';
import { accountsFixture, SERVER, type AccountsFixture } from '../users/account-fixture.js';
import { startAccountServer, type AccountServer } from './account-http.js';

const SECRET = 'a shared secret';

for (const backend of await storageBackends()) {
  describe(`passwords, deactivation, devices and shared-secret registration over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    let accounts: AccountService;
    let server: AccountServer;
    let noSecretServer: AccountServer;
    const deactivated: [string, boolean][] = [];
    const registered: [string, string, string | undefined][] = [];

    before(async () => {
      fx = await accountsFixture(backend.create);
      accounts = fx.service({
        registrationSharedSecret: SECRET,
        onDeactivate: (userId, { erase }) => void deactivated.push([userId, erase]),
        onRegister: (userId, localpart, displayname) => void registered.push([userId, localpart, displayname]),
      });
      server = await startAccountServer(accounts);
      noSecretServer = await startAccountServer(fx.service({ registrationSharedSecret: null }));
    });
    after(async () => {
      await server.close();
      await noSecretServer.close();
      await fx.close();
    });

    async function newUser(localpart: string, password: string, devices = 1): Promise<string[]> {
      await accounts.registerUser({ localpart, password, admin: false });
      const tokens: string[] = [];
      for (let i = 0; i < devices; i++) {
        const r = await server.call('POST', '/login', { body: { type: 'm.login.password', user: localpart, password } });
        tokens.push(r.body['access_token']);
      }
      return tokens;
    }
    const whoamiStatus = async (token: string) => (await server.call('GET', '/account/whoami', { token })).status;
    const passwordAuth = (user: string, password: string, session?: string) => ({
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user },
      password,
      ...(session !== undefined ? { session } : {}),
    });

    test('password change: UIA challenge, wrong password is 401 M_FORBIDDEN, then the change logs other devices out', async () => {
      const [mine, other] = await newUser('carol', 'old-password', 2);
      const first = await server.call('POST', '/account/password', { token: mine!, body: { new_password: 'new-password' } });
      assert.equal(first.status, 401);
      assert.deepEqual(first.body['flows'], [{ stages: ['m.login.password'] }]);
      assert.equal(first.body['errcode'], undefined);
      const session = first.body['session'];

      const wrong = await server.call('POST', '/account/password', { token: mine!, body: { new_password: 'new-password', auth: passwordAuth('carol', 'nope', session) } });
      assert.deepEqual([wrong.status, wrong.body['errcode'], wrong.body['session'], wrong.body['completed']], [401, 'M_FORBIDDEN', session, []]);
      assert.deepEqual(wrong.body['flows'], [{ stages: ['m.login.password'] }]);

      const ok = await server.call('POST', '/account/password', { token: mine!, body: { new_password: 'new-password', auth: passwordAuth('carol', 'old-password', session) } });
      assert.deepEqual([ok.status, ok.body], [200, {}]);
      assert.equal(await whoamiStatus(mine!), 200, 'the requesting device stays logged in');
      assert.equal(await whoamiStatus(other!), 401, 'other devices are logged out');
      assert.equal((await accounts.listDevices(`@carol:${SERVER}`)).length, 1);

      const oldLogin = await server.call('POST', '/login', { body: { type: 'm.login.password', user: 'carol', password: 'old-password' } });
      assert.equal(oldLogin.body['errcode'], 'M_FORBIDDEN');
      const newLogin = await server.call('POST', '/login', { body: { type: 'm.login.password', user: 'carol', password: 'new-password' } });
      assert.equal(newLogin.status, 200);
    });

    test('password change with logout_devices false keeps every device; a missing new_password is 400', async () => {
      const [mine, other] = await newUser('dan', 'pw-one', 2);
      const r = await server.call('POST', '/account/password', {
        token: mine!,
        body: { new_password: 'pw-two', logout_devices: false, auth: passwordAuth(`@dan:${SERVER}`, 'pw-one') },
      });
      assert.equal(r.status, 200);
      assert.equal(await whoamiStatus(other!), 200);
      const missing = await server.call('POST', '/account/password', { token: mine!, body: { auth: passwordAuth('dan', 'pw-two') } });
      assert.deepEqual([missing.status, missing.body['errcode']], [400, 'M_MISSING_PARAM']);
    });

    test("the password stage accepts only the requester's own password", async () => {
      const [eve] = await newUser('eve', 'eve-pw');
      await newUser('frank', 'frank-pw', 0);
      // Another user's right password: 403 outright, as Synapse answers.
      const r = await server.call('POST', '/account/password', { token: eve!, body: { new_password: 'x', auth: passwordAuth('frank', 'frank-pw') } });
      assert.deepEqual([r.status, r.body['errcode']], [403, 'M_FORBIDDEN']);
      assert.equal(r.body['flows'], undefined);
      // Their wrong password is an ordinary failed attempt, to be retried.
      const wrong = await server.call('POST', '/account/password', { token: eve!, body: { new_password: 'x', auth: passwordAuth('frank', 'nope') } });
      assert.deepEqual([wrong.status, wrong.body['errcode']], [401, 'M_FORBIDDEN']);
      assert.deepEqual(wrong.body['completed'], []);
    });

    test('a UIA session serves one operation; an unknown session is 400', async () => {
      const [token] = await newUser('gina', 'gina-pw');
      const pw = await server.call('POST', '/account/password', { token: token!, body: { new_password: 'x' } });
      const cross = await server.call('POST', '/account/deactivate', { token: token!, body: { auth: passwordAuth('gina', 'gina-pw', pw.body['session']) } });
      assert.deepEqual([cross.status, cross.body['errcode']], [403, 'M_FORBIDDEN']);
      const unknown = await server.call('POST', '/account/deactivate', { token: token!, body: { auth: { session: 'no-such-session' } } });
      assert.equal(unknown.status, 400);
      assert.equal(await whoamiStatus(token!), 200);
    });

    test('deactivation: UIA, then tokens gone, login M_USER_DEACTIVATED, the name stays taken', async () => {
      const [token, other] = await newUser('hank', 'hank-pw', 2);
      const first = await server.call('POST', '/account/deactivate', { token: token!, body: {} });
      assert.equal(first.status, 401);
      assert.deepEqual(first.body['flows'], [{ stages: ['m.login.password'] }]);
      const wrong = await server.call('POST', '/account/deactivate', { token: token!, body: { auth: passwordAuth('hank', 'bad', first.body['session']) } });
      assert.deepEqual([wrong.status, wrong.body['errcode']], [401, 'M_FORBIDDEN']);
      assert.equal(await whoamiStatus(token!), 200);

      const r = await server.call('POST', '/account/deactivate', { token: token!, body: { erase: true, auth: passwordAuth('hank', 'hank-pw', first.body['session']) } });
      assert.deepEqual([r.status, r.body], [200, { id_server_unbind_result: 'success' }]);
      for (const t of [token!, other!]) {
        const w = await server.call('GET', '/account/whoami', { token: t });
        assert.deepEqual([w.status, w.body['errcode']], [401, 'M_UNKNOWN_TOKEN']);
      }
      assert.deepEqual(deactivated.at(-1), [`@hank:${SERVER}`, true]);
      assert.deepEqual(await accounts.listDevices(`@hank:${SERVER}`), []);
      const login = await server.call('POST', '/login', { body: { type: 'm.login.password', user: 'hank', password: 'hank-pw' } });
      assert.deepEqual([login.status, login.body['errcode']], [403, 'M_USER_DEACTIVATED']);
      const reuse = await server.call('GET', '/register/available?username=hank');
      assert.equal(reuse.body['errcode'], 'M_USER_IN_USE');
    });

    test('devices: get, rename, unknown device 404, name too long 400', async () => {
      const [token] = await newUser('ivy', 'ivy-pw');
      const list = await server.call('GET', '/devices', { token: token! });
      assert.equal(list.body['devices'].length, 1);
      const deviceId = list.body['devices'][0]['device_id'];
      const renamed = await server.call('PUT', `/devices/${deviceId}`, { token: token!, body: { display_name: 'Work laptop' } });
      assert.deepEqual([renamed.status, renamed.body], [200, {}]);
      const got = await server.call('GET', `/devices/${deviceId}`, { token: token! });
      assert.equal(got.body['device_id'], deviceId);
      assert.equal(got.body['display_name'], 'Work laptop');
      const unchanged = await server.call('PUT', `/devices/${deviceId}`, { token: token!, body: {} });
      assert.equal(unchanged.status, 200);
      assert.equal((await server.call('GET', `/devices/${deviceId}`, { token: token! })).body['display_name'], 'Work laptop');

      const missing = await server.call('GET', '/devices/NOSUCHDEV', { token: token! });
      assert.deepEqual([missing.status, missing.body['errcode']], [404, 'M_NOT_FOUND']);
      const putMissing = await server.call('PUT', '/devices/NOSUCHDEV', { token: token!, body: { display_name: 'x' } });
      assert.deepEqual([putMissing.status, putMissing.body['errcode']], [404, 'M_NOT_FOUND']);
      const long = await server.call('PUT', `/devices/${deviceId}`, { token: token!, body: { display_name: 'x'.repeat(101) } });
      assert.deepEqual([long.status, long.body['errcode']], [400, 'M_TOO_LARGE']);
      const badType = await server.call('PUT', `/devices/${deviceId}`, { token: token!, body: { display_name: 7 } });
      assert.deepEqual([badType.status, badType.body['errcode']], [400, 'M_BAD_JSON']);
      // Another user's device is not visible.
      const [other] = await newUser('jack', 'jack-pw');
      const foreign = await server.call('GET', `/devices/${deviceId}`, { token: other! });
      assert.equal(foreign.status, 404);
    });

    test('DELETE /devices/{id} asks for UIA, then deletes the device and revokes its token', async () => {
      const [mine, doomed] = await newUser('kate', 'kate-pw', 2);
      const doomedDevice = (await server.call('GET', '/account/whoami', { token: doomed! })).body['device_id'];
      const first = await server.call('DELETE', `/devices/${doomedDevice}`, { token: mine! });
      assert.equal(first.status, 401);
      assert.deepEqual(first.body['flows'], [{ stages: ['m.login.password'] }]);
      assert.equal(await whoamiStatus(doomed!), 200);
      const r = await server.call('DELETE', `/devices/${doomedDevice}`, { token: mine!, body: { auth: passwordAuth('kate', 'kate-pw', first.body['session']) } });
      assert.deepEqual([r.status, r.body], [200, {}]);
      assert.equal(await whoamiStatus(doomed!), 401);
      assert.equal(await whoamiStatus(mine!), 200);
      assert.equal((await server.call('GET', `/devices/${doomedDevice}`, { token: mine! })).status, 404);
      // The session for one device does not delete another.
      const another = await server.call('POST', '/login', { body: { type: 'm.login.password', user: 'kate', password: 'kate-pw' } });
      const s = await server.call('DELETE', `/devices/${another.body['device_id']}`, { token: mine! });
      const crossed = await server.call('DELETE', `/devices/${doomedDevice}`, { token: mine!, body: { auth: passwordAuth('kate', 'kate-pw', s.body['session']) } });
      assert.equal(crossed.status, 403);
    });

    test('POST /delete_devices asks for UIA and deletes the listed devices', async () => {
      const [mine, a, b] = await newUser('liam', 'liam-pw', 3);
      const ids = [];
      for (const t of [a!, b!]) ids.push((await server.call('GET', '/account/whoami', { token: t })).body['device_id']);
      const missing = await server.call('POST', '/delete_devices', { token: mine!, body: {} });
      assert.deepEqual([missing.status, missing.body['errcode']], [400, 'M_MISSING_PARAM']);
      const first = await server.call('POST', '/delete_devices', { token: mine!, body: { devices: [...ids, 'UNKNOWNDEV'] } });
      assert.equal(first.status, 401);
      const r = await server.call('POST', '/delete_devices', { token: mine!, body: { devices: [...ids, 'UNKNOWNDEV'], auth: passwordAuth('liam', 'liam-pw', first.body['session']) } });
      assert.equal(r.status, 200);
      assert.equal(await whoamiStatus(a!), 401);
      assert.equal(await whoamiStatus(b!), 401);
      assert.equal(await whoamiStatus(mine!), 200);
      assert.equal((await accounts.listDevices(`@liam:${SERVER}`)).length, 1);
    });

    test('shared-secret registration: nonce, wrong mac 403, nonce single use, right mac registers an admin', async () => {
      const nonceOf = async () => (await server.call('GET', '/_ext/admin/v1/register')).body['nonce'] as string;
      const fields = { username: 'Operator', password: 'op-pw', admin: true };
      const n1 = await nonceOf();
      const bad = await server.call('POST', '/_ext/admin/v1/register', { body: { nonce: n1, ...fields, mac: sharedSecretMac('wrong secret', { nonce: n1, ...fields }) } });
      assert.deepEqual([bad.status, bad.body['errcode']], [403, 'M_FORBIDDEN']);
      const reused = await server.call('POST', '/_ext/admin/v1/register', { body: { nonce: n1, ...fields, mac: sharedSecretMac(SECRET, { nonce: n1, ...fields }) } });
      assert.deepEqual([reused.status, reused.body['errcode']], [400, 'M_UNKNOWN']);
      // A MAC over other fields (notadmin) does not authorize an admin.
      const n2 = await nonceOf();
      const tampered = await server.call('POST', '/_synapse/admin/v1/register', { body: { nonce: n2, ...fields, mac: sharedSecretMac(SECRET, { nonce: n2, ...fields, admin: false }) } });
      assert.equal(tampered.status, 403);

      const n3 = await nonceOf();
      const ok = await server.call('POST', '/_synapse/admin/v1/register', {
        body: { nonce: n3, ...fields, displayname: 'The Operator', mac: sharedSecretMac(SECRET, { nonce: n3, ...fields }) },
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.body['user_id'], `@operator:${SERVER}`);
      assert.equal(ok.body['home_server'], SERVER);
      assert.equal(await accounts.isAdmin(`@operator:${SERVER}`), true);
      assert.deepEqual(registered.at(-1), [`@operator:${SERVER}`, 'operator', 'The Operator']);
      const who = await server.call('GET', '/account/whoami', { token: ok.body['access_token'] });
      assert.deepEqual(who.body, { user_id: `@operator:${SERVER}`, device_id: ok.body['device_id'], is_guest: false });

      const n4 = await nonceOf();
      const taken = await server.call('POST', '/_ext/admin/v1/register', { body: { nonce: n4, ...fields, mac: sharedSecretMac(SECRET, { nonce: n4, ...fields }) } });
      assert.deepEqual([taken.status, taken.body['errcode']], [400, 'M_USER_IN_USE']);
      const noMac = await server.call('POST', '/_ext/admin/v1/register', { body: { nonce: await nonceOf(), ...fields } });
      assert.deepEqual([noMac.status, noMac.body['errcode']], [400, 'M_MISSING_PARAM']);
    });

    test('shared-secret registration is off without a secret', async () => {
      const get = await noSecretServer.call('GET', '/_ext/admin/v1/register');
      assert.deepEqual([get.status, get.body['errcode']], [400, 'M_UNKNOWN']);
      const post = await noSecretServer.call('POST', '/_ext/admin/v1/register', { body: { nonce: 'x', username: 'u', password: 'p', mac: 'm' } });
      assert.deepEqual([post.status, post.body['errcode']], [400, 'M_UNKNOWN']);
    });
  });
}
