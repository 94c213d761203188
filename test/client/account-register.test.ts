import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AccountService } from '../../src/users/accounts.js';
import { storageBackends } from '../support/databases.js';
import { accountsFixture, SERVER, type AccountsFixture } from '../users/account-fixture.js';
import { registerWithDummy, startAccountServer, type AccountServer } from './account-http.js';

for (const backend of await storageBackends()) {
  describe(`registration over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    let open: AccountService;
    let openServer: AccountServer;
    let closed: AccountService;
    let closedServer: AccountServer;
    const registered: [string, string, string | undefined][] = [];

    before(async () => {
      fx = await accountsFixture(backend.create);
      open = fx.service({ onRegister: (userId, localpart, displayname) => void registered.push([userId, localpart, displayname]) });
      openServer = await startAccountServer(open);
      closed = fx.service({ registrationDisabled: true, guestsDisabled: true });
      closedServer = await startAccountServer(closed);
    });
    after(async () => {
      await openServer.close();
      await closedServer.close();
      await fx.close();
    });

    // First, while the database has no accounts.
    test('the first-start token registers the first account as an admin', async () => {
      const token = await closed.firstStartToken();
      assert.ok(token);
      const r = await closedServer.call('POST', '/register', { body: { username: 'root', password: 'pw', auth: { type: 'm.login.registration_token', token } } });
      assert.equal(r.status, 200);
      assert.equal(await closed.isAdmin(`@root:${SERVER}`), true);
      const who = await closedServer.call('GET', '/account/whoami', { token: r.body['access_token'] });
      assert.equal(who.body['user_id'], `@root:${SERVER}`);
      assert.equal(await closed.firstStartToken(), null);
      const again = await closedServer.call('POST', '/register', { body: { username: 'root2', password: 'pw', auth: { type: 'm.login.registration_token', token } } });
      assert.equal(again.status, 403);
    });

    test('open registration: 401 with flows and a session, then the dummy stage registers and logs in', async () => {
      const body = { username: 'alice', password: 'wonderland', initial_device_display_name: 'Alice phone' };
      const first = await openServer.call('POST', '/register', { body });
      assert.equal(first.status, 401);
      assert.equal(typeof first.body['session'], 'string');
      assert.deepEqual(first.body['flows'], [{ stages: ['m.login.dummy'] }, { stages: ['m.login.registration_token'] }]);
      assert.deepEqual(first.body['params'], {});
      assert.deepEqual(first.body['completed'], []);
      assert.equal(first.body['errcode'], undefined, 'a plain challenge carries no errcode');

      const done = await openServer.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.dummy', session: first.body['session'] } } });
      assert.equal(done.status, 200);
      assert.equal(done.body['user_id'], `@alice:${SERVER}`);
      assert.equal(done.body['home_server'], SERVER);
      assert.match(done.body['device_id'], /^[A-Z]{10}$/);
      const who = await openServer.call('GET', '/account/whoami', { token: done.body['access_token'] });
      assert.deepEqual(who.body, { user_id: `@alice:${SERVER}`, device_id: done.body['device_id'], is_guest: false });
      const devices = await openServer.call('GET', '/devices', { token: done.body['access_token'] });
      assert.deepEqual(devices.body['devices'].map((d: Record<string, unknown>) => [d['device_id'], d['display_name']]), [[done.body['device_id'], 'Alice phone']]);
      assert.deepEqual(registered.at(-1), [`@alice:${SERVER}`, 'alice', undefined]);

      // The completed session remembers its account: the same request again logs it in once more.
      const again = await openServer.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.dummy', session: first.body['session'] } } });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body['user_id'], `@alice:${SERVER}`);
      assert.notEqual(again.body['access_token'], done.body['access_token']);
      assert.equal(registered.filter(([u]) => u === `@alice:${SERVER}`).length, 1, 'registered once');
    });

    test('usernames are lower-cased; a given device_id is used; the /_matrix prefix and r0 answer too', async () => {
      const first = await openServer.call('POST', '/register', { prefix: '/_matrix/client/r0', body: { username: 'Bob', password: 'pw', device_id: 'BOBDEVICE' } });
      assert.equal(first.status, 401);
      const done = await openServer.call('POST', '/register', {
        prefix: '/_matrix/client/r0',
        body: { username: 'Bob', password: 'pw', device_id: 'BOBDEVICE', auth: { type: 'm.login.dummy', session: first.body['session'] } },
      });
      assert.equal(done.status, 200);
      assert.equal(done.body['user_id'], `@bob:${SERVER}`);
      assert.equal(done.body['device_id'], 'BOBDEVICE');
    });

    test('a later request carrying only auth and password continues with the parameters given first', async () => {
      const first = await openServer.call('POST', '/register', { body: { username: 'dave', password: 'pw', device_id: 'DAVEDEV' } });
      const done = await openServer.call('POST', '/register', { body: { password: 'pw', auth: { type: 'm.login.dummy', session: first.body['session'] } } });
      assert.equal(done.status, 200);
      assert.equal(done.body['user_id'], `@dave:${SERVER}`);
      assert.equal(done.body['device_id'], 'DAVEDEV');
    });

    test('bad and taken usernames are refused before authentication', async () => {
      const cases: [unknown, string][] = [
        ['alice', 'M_USER_IN_USE'],
        ['ALICE', 'M_USER_IN_USE'],
        ['al ice', 'M_INVALID_USERNAME'],
        ['al:ice', 'M_INVALID_USERNAME'],
        ['', 'M_INVALID_USERNAME'],
        ['12345', 'M_INVALID_USERNAME'],
        ['_bridge', 'M_INVALID_USERNAME'],
        ['x'.repeat(250), 'M_INVALID_USERNAME'],
      ];
      for (const [username, errcode] of cases) {
        const r = await openServer.call('POST', '/register', { body: { username, password: 'pw' } });
        assert.equal(r.status, 400, String(username));
        assert.equal(r.body['errcode'], errcode, String(username));
        assert.equal(r.body['session'], undefined);
      }
      const wrongType = await openServer.call('POST', '/register', { body: { username: 5, password: 'pw' } });
      assert.equal(wrongType.status, 400);
      assert.equal(wrongType.body['errcode'], 'M_BAD_JSON');
      const badKind = await openServer.call('POST', '/register?kind=robot', { body: {} });
      assert.equal(badKind.body['errcode'], 'M_INVALID_PARAM');
    });

    test('the password is required once authentication is complete, and capped in length', async () => {
      const first = await openServer.call('POST', '/register', { body: { username: 'carol' } });
      assert.equal(first.status, 401);
      const done = await openServer.call('POST', '/register', { body: { username: 'carol', auth: { type: 'm.login.dummy', session: first.body['session'] } } });
      assert.equal(done.status, 400);
      assert.equal(done.body['errcode'], 'M_MISSING_PARAM');
      const long = await openServer.call('POST', '/register', { body: { username: 'carol', password: 'x'.repeat(513) } });
      assert.equal(long.status, 400);
      assert.equal(long.body['errcode'], 'M_INVALID_PARAM');
      assert.equal(await open.userExists(`@carol:${SERVER}`), false);
    });

    test('inhibit_login registers without a token or device', async () => {
      const body = await registerWithDummy(openServer, { username: 'erin', password: 'pw', inhibit_login: true });
      assert.deepEqual(body, { user_id: `@erin:${SERVER}`, home_server: SERVER });
      assert.deepEqual(await open.listDevices(`@erin:${SERVER}`), []);
    });

    test('without a username the server allocates a numeric localpart', async () => {
      const body = await registerWithDummy(openServer, { password: 'pw' });
      assert.match(body['user_id'], new RegExp(`^@[0-9]+:${SERVER.replace('.', '\\.')}$`));
    });

    test('GET /register/available', async () => {
      const free = await openServer.call('GET', '/register/available?username=frank');
      assert.deepEqual([free.status, free.body], [200, { available: true }]);
      const taken = await openServer.call('GET', '/register/available?username=alice');
      assert.deepEqual([taken.status, taken.body['errcode']], [400, 'M_USER_IN_USE']);
      const invalid = await openServer.call('GET', '/register/available?username=%C3%A9');
      assert.deepEqual([invalid.status, invalid.body['errcode']], [400, 'M_INVALID_USERNAME']);
      const none = await openServer.call('GET', '/register/available');
      assert.deepEqual([none.status, none.body['errcode']], [400, 'M_MISSING_PARAM']);
    });

    test('guests get a numeric localpart and a token; guest-only routes admit them, others do not', async () => {
      const r = await openServer.call('POST', '/register?kind=guest', { body: { username: 'ignored', password: 'ignored', initial_device_display_name: 'Guest tab' } });
      assert.equal(r.status, 200);
      assert.match(r.body['user_id'], /^@[0-9]+:/);
      const who = await openServer.call('GET', '/account/whoami', { token: r.body['access_token'] });
      assert.deepEqual(who.body, { user_id: r.body['user_id'], device_id: r.body['device_id'], is_guest: true });
      const devices = await openServer.call('GET', '/devices', { token: r.body['access_token'] });
      assert.deepEqual([devices.status, devices.body['errcode']], [403, 'M_GUEST_ACCESS_FORBIDDEN']);
      const [device] = await open.listDevices(r.body['user_id']);
      assert.equal(device?.displayName, 'Guest tab');
    });

    test('guest registration when guests are disabled is 403 M_FORBIDDEN', async () => {
      const r = await closedServer.call('POST', '/register?kind=guest', { body: {} });
      assert.deepEqual([r.status, r.body['errcode']], [403, 'M_FORBIDDEN']);
    });

    test('closed registration without usable tokens is 403 M_FORBIDDEN', async () => {
      for (const method of ['GET', 'POST']) {
        const r = await closedServer.call(method, '/register', method === 'POST' ? { body: { username: 'nobody', password: 'pw' } } : {});
        assert.deepEqual([r.status, r.body['errcode']], [403, 'M_FORBIDDEN'], method);
      }
    });

    test('registration tokens: flows, validity, wrong stage, wrong token, single use', async () => {
      await closed.createRegistrationToken({ token: 'once-only', usesAllowed: 1, expiryTime: null });
      const flows = await closedServer.call('GET', '/register');
      assert.deepEqual(flows.body, { flows: [{ stages: ['m.login.registration_token'] }], params: {} });
      const validity = (token: string) => closedServer.call('GET', `/register/m.login.registration_token/validity?token=${token}`, { prefix: '/_chat/client/v1' });
      assert.deepEqual((await validity('once-only')).body, { valid: true });
      assert.deepEqual((await validity('nope')).body, { valid: false });

      const body = { username: 'grace', password: 'pw' };
      const first = await closedServer.call('POST', '/register', { body });
      assert.equal(first.status, 401);
      const session = first.body['session'];
      const dummy = await closedServer.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.dummy', session } } });
      assert.deepEqual([dummy.status, dummy.body['errcode'], dummy.body['session']], [401, 'M_UNRECOGNIZED', session]);
      const wrong = await closedServer.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.registration_token', token: 'nope', session } } });
      assert.deepEqual([wrong.status, wrong.body['errcode'], wrong.body['completed']], [401, 'M_UNAUTHORIZED', []]);
      const right = await closedServer.call('POST', '/register', { body: { ...body, auth: { type: 'm.login.registration_token', token: 'once-only', session } } });
      assert.equal(right.status, 200);
      assert.equal(right.body['user_id'], `@grace:${SERVER}`);
      assert.equal(await closed.isAdmin(`@grace:${SERVER}`), false);

      assert.deepEqual((await validity('once-only')).body, { valid: false });
      // Used up: another registration cannot pass the stage, and with no usable token left the
      // closed server refuses registration outright.
      const next = await closedServer.call('POST', '/register', { body: { username: 'heidi', password: 'pw', auth: { type: 'm.login.registration_token', token: 'once-only' } } });
      assert.deepEqual([next.status, next.body['errcode']], [403, 'M_FORBIDDEN']);
      await closed.createRegistrationToken({ token: 'keeps-door-open', usesAllowed: null, expiryTime: null });
      const stillUsed = await closedServer.call('POST', '/register', { body: { username: 'heidi', password: 'pw', auth: { type: 'm.login.registration_token', token: 'once-only' } } });
      assert.deepEqual([stillUsed.status, stillUsed.body['errcode']], [401, 'M_UNAUTHORIZED']);
      await closed.deleteRegistrationToken('keeps-door-open');
    });

    test('two sessions racing for a token\'s last use: it is counted when a registration completes; the later one is asked again', async () => {
      await closed.createRegistrationToken({ token: 'late', usesAllowed: 1, expiryTime: null });
      const s1 = await closedServer.call('POST', '/register', { body: { username: 'kim' } });
      const s2 = await closedServer.call('POST', '/register', { body: { username: 'lee' } });
      const passToken = (username: string, session: string) =>
        closedServer.call('POST', '/register', { body: { username, auth: { type: 'm.login.registration_token', token: 'late', session } } });
      assert.equal((await passToken('kim', s1.body['session'])).body['errcode'], 'M_MISSING_PARAM');
      assert.equal((await passToken('lee', s2.body['session'])).body['errcode'], 'M_MISSING_PARAM');
      const kim = await closedServer.call('POST', '/register', { body: { username: 'kim', password: 'pw', auth: { session: s1.body['session'] } } });
      assert.equal(kim.status, 200);
      const lee = await closedServer.call('POST', '/register', { body: { username: 'lee', password: 'pw', auth: { session: s2.body['session'] } } });
      assert.deepEqual([lee.status, lee.body['errcode'], lee.body['completed']], [401, 'M_UNAUTHORIZED', []]);
      assert.equal(await closed.userExists(`@lee:${SERVER}`), false);
    });

  });
}
