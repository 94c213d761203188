import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccountService } from '../../src/users/accounts.js';
import { storageBackends } from '../support/databases.js';
import { accountsFixture, SERVER, type AccountsFixture } from '../users/account-fixture.js';
import { startAccountServer, type AccountServer } from './account-http.js';

for (const backend of await storageBackends()) {
  describe(`login and logout over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    let accounts: AccountService;
    let server: AccountServer;
    const deletedDevices: [string, readonly string[]][] = [];

    before(async () => {
      fx = await accountsFixture(backend.create);
      accounts = fx.service({
        clientBaseUrl: 'https://chat.hearth.test',
        onDevicesDeleted: (userId, ids) => void deletedDevices.push([userId, ids]),
      });
      server = await startAccountServer(accounts);
      await accounts.registerUser({ localpart: 'alice', password: 'wonderland', admin: false });
      await accounts.registerUser({ localpart: 'bob', password: 'builder', admin: false });
    });
    after(async () => {
      await server.close();
      await fx.close();
    });

    const login = (body: Record<string, unknown>) => server.call('POST', '/login', { body: { type: 'm.login.password', ...body } });

    test('GET /login offers m.login.password', async () => {
      const r = await server.call('GET', '/login');
      assert.equal(r.status, 200);
      assert.ok(r.body['flows'].some((f: Record<string, unknown>) => f['type'] === 'm.login.password'));
    });

    test('m.id.user with a localpart, a full user ID or the legacy user field', async () => {
      for (const body of [
        { identifier: { type: 'm.id.user', user: 'alice' } },
        { identifier: { type: 'm.id.user', user: `@alice:${SERVER}` } },
        { identifier: { type: 'm.id.user', user: 'Alice' } },
        { user: 'alice' },
        { user: `@alice:${SERVER}` },
      ]) {
        const r = await login({ ...body, password: 'wonderland', initial_device_display_name: 'Laptop' });
        assert.equal(r.status, 200, JSON.stringify(body));
        assert.equal(r.body['user_id'], `@alice:${SERVER}`);
        assert.equal(r.body['home_server'], SERVER);
        assert.deepEqual(r.body['well_known'], { 'm.homeserver': { base_url: 'https://chat.hearth.test' } });
        assert.match(r.body['access_token'], /^hth_/);
        const who = await server.call('GET', '/account/whoami', { token: r.body['access_token'] });
        assert.deepEqual(who.body, { user_id: `@alice:${SERVER}`, device_id: r.body['device_id'], is_guest: false });
        const device = await server.call('GET', `/devices/${r.body['device_id']}`, { token: r.body['access_token'] });
        assert.equal(device.body['display_name'], 'Laptop');
      }
    });

    test('wrong password, unknown user, remote user, third-party identifier: 403 M_FORBIDDEN', async () => {
      for (const body of [
        { identifier: { type: 'm.id.user', user: 'alice' }, password: 'wrong' },
        { identifier: { type: 'm.id.user', user: 'nobody' }, password: 'wonderland' },
        { identifier: { type: 'm.id.user', user: '@alice:elsewhere.test' }, password: 'wonderland' },
        { identifier: { type: 'm.id.user', user: 'bob' }, password: 'wonderland' },
        { identifier: { type: 'm.id.thirdparty', medium: 'email', address: 'a@b.c' }, password: 'wonderland' },
      ]) {
        const r = await login(body);
        assert.deepEqual([r.status, r.body['errcode']], [403, 'M_FORBIDDEN'], JSON.stringify(body));
      }
    });

    test('malformed logins: 400 with the matching errcode', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ type: 'm.login.token', token: 'abc' }, 'M_UNKNOWN'],
        [{ type: undefined, user: 'alice', password: 'wonderland' }, 'M_MISSING_PARAM'],
        [{ type: 5, user: 'alice', password: 'wonderland' }, 'M_BAD_JSON'],
        [{ user: 'alice' }, 'M_MISSING_PARAM'],
        [{ password: 'wonderland' }, 'M_MISSING_PARAM'],
        [{ user: 'alice', password: 5 }, 'M_BAD_JSON'],
        [{ identifier: 'alice', password: 'wonderland' }, 'M_BAD_JSON'],
        [{ identifier: { type: 'm.id.weird' }, password: 'wonderland' }, 'M_UNKNOWN'],
      ];
      for (const [body, errcode] of cases) {
        const r = await login(body);
        assert.deepEqual([r.status, r.body['errcode']], [400, errcode], JSON.stringify(body));
      }
    });

    test('each login creates a device; reusing a device_id revokes its earlier token', async () => {
      const first = await login({ user: 'bob', password: 'builder', device_id: 'BOBPHONE', initial_device_display_name: 'Phone' });
      assert.equal(first.body['device_id'], 'BOBPHONE');
      const other = await login({ user: 'bob', password: 'builder' });
      assert.notEqual(other.body['device_id'], 'BOBPHONE');
      const second = await login({ user: 'bob', password: 'builder', device_id: 'BOBPHONE', initial_device_display_name: 'Renamed?' });
      assert.equal(second.body['device_id'], 'BOBPHONE');
      const stale = await server.call('GET', '/account/whoami', { token: first.body['access_token'] });
      assert.deepEqual([stale.status, stale.body['errcode']], [401, 'M_UNKNOWN_TOKEN']);
      assert.equal((await server.call('GET', '/account/whoami', { token: second.body['access_token'] })).status, 200);
      assert.equal((await server.call('GET', '/account/whoami', { token: other.body['access_token'] })).status, 200);
      const devices = await server.call('GET', '/devices', { token: second.body['access_token'] });
      const phone = devices.body['devices'].filter((d: Record<string, unknown>) => d['device_id'] === 'BOBPHONE');
      assert.deepEqual(phone.map((d: Record<string, unknown>) => d['display_name']), ['Phone'], 'one device, its name kept');
    });

    test('a missing token is 401 M_MISSING_TOKEN, an unknown one 401 M_UNKNOWN_TOKEN', async () => {
      const none = await server.call('GET', '/account/whoami');
      assert.deepEqual([none.status, none.body['errcode']], [401, 'M_MISSING_TOKEN']);
      const bogus = await server.call('GET', '/account/whoami', { token: 'hth_not-a-real-token' });
      assert.deepEqual([bogus.status, bogus.body['errcode']], [401, 'M_UNKNOWN_TOKEN']);
    });

    test('logout revokes the token and deletes its device', async () => {
      const a = await login({ user: 'alice', password: 'wonderland' });
      const b = await login({ user: 'alice', password: 'wonderland' });
      const token = a.body['access_token'];
      assert.equal((await server.call('GET', '/account/whoami', { token })).status, 200); // now cached
      const out = await server.call('POST', '/logout', { token });
      assert.deepEqual([out.status, out.body], [200, {}]);
      const after = await server.call('GET', '/account/whoami', { token });
      assert.deepEqual([after.status, after.body['errcode']], [401, 'M_UNKNOWN_TOKEN']);
      assert.equal(await accounts.listDevices(`@alice:${SERVER}`).then((ds) => ds.some((d) => d.deviceId === a.body['device_id'])), false);
      assert.deepEqual(deletedDevices.at(-1), [`@alice:${SERVER}`, [a.body['device_id']]]);
      assert.equal((await server.call('GET', '/account/whoami', { token: b.body['access_token'] })).status, 200);
    });

    test('logout/all revokes every token of the user and deletes every device', async () => {
      const tokens = [];
      for (let i = 0; i < 3; i++) tokens.push((await login({ user: 'alice', password: 'wonderland' })).body['access_token'] as string);
      const bob = (await login({ user: 'bob', password: 'builder' })).body['access_token'];
      for (const token of tokens) assert.equal((await server.call('GET', '/account/whoami', { token })).status, 200);
      const out = await server.call('POST', '/logout/all', { token: tokens[0] });
      assert.equal(out.status, 200);
      for (const token of tokens) {
        const r = await server.call('GET', '/account/whoami', { token });
        assert.deepEqual([r.status, r.body['errcode']], [401, 'M_UNKNOWN_TOKEN']);
      }
      assert.deepEqual(await accounts.listDevices(`@alice:${SERVER}`), []);
      assert.equal((await server.call('GET', '/account/whoami', { token: bob })).status, 200);
    });

    test('guests can log out', async () => {
      const guest = await server.call('POST', '/register?kind=guest', { body: {} });
      const out = await server.call('POST', '/logout', { token: guest.body['access_token'] });
      assert.equal(out.status, 200);
      const r = await server.call('GET', '/account/whoami', { token: guest.body['access_token'] });
      assert.equal(r.body['errcode'], 'M_UNKNOWN_TOKEN');
    });
  });
}
