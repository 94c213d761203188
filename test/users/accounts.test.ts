import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpRequest } from '../../src/http/route.js';
import { insertAccessToken } from '../../src/storage/accounts/access-tokens.js';
import { findDevice } from '../../src/storage/accounts/devices.js';
import { insertUser } from '../../src/storage/accounts/users.js';
import type { AccountService } from '../../src/users/accounts.js';
import { hashAccessToken } from '../../src/users/tokens.js';
import { storageBackends } from '../support/databases.js';
import { accountsFixture, SERVER, type AccountsFixture } from './account-fixture.js';

const request = (remoteAddress = '192.0.2.7') => ({ remoteAddress }) as HttpRequest;

for (const backend of await storageBackends()) {
  describe(`AccountService on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    let accounts: AccountService;
    const devicesDeleted: [string, readonly string[]][] = [];

    before(async () => {
      fx = await accountsFixture(backend.create);
      accounts = fx.service({ onDevicesDeleted: (u, ids) => void devicesDeleted.push([u, ids]) });
    });
    after(() => fx.close());

    const login = (user: string, password: string, extra: { deviceId?: string } = {}) =>
      accounts.login({ type: 'm.login.password', identifier: { user }, password, ...extra });

    test('registerUser creates a non-guest account with a bcrypt hash; admin helpers read it', async () => {
      const before = await accounts.countUsers();
      const userId = await accounts.registerUser({ localpart: 'Admin', password: 'pw', admin: true });
      assert.equal(userId, `@admin:${SERVER}`);
      assert.equal(await accounts.userExists(userId), true);
      assert.equal(await accounts.userExists(`@nobody:${SERVER}`), false);
      assert.equal(await accounts.isAdmin(userId), true);
      assert.equal(await accounts.countUsers(), before + 1);
      const row = await fx.database.db.selectFrom('users').select(['password_hash', 'is_guest']).where('user_id', '=', userId).executeTakeFirstOrThrow();
      assert.match(row.password_hash ?? '', /^hmac-sha256:\$2b\$04\$/);
      assert.equal(row.is_guest, 0);
      await assert.rejects(accounts.registerUser({ localpart: 'admin', password: 'pw', admin: false }), { errcode: 'M_USER_IN_USE' });
      await assert.rejects(accounts.registerUser({ localpart: 'bad name', password: 'pw', admin: false }), { errcode: 'M_INVALID_USERNAME' });
      await assert.rejects(accounts.registerUser({ localpart: 'ok', password: '', admin: false }), { errcode: 'M_WEAK_PASSWORD' });
    });

    test('countUsers leaves out guests and deactivated accounts unless asked', async () => {
      const base = await accounts.countUsers();
      const all = await accounts.countUsers({ includeGuests: true, includeDeactivated: true });
      await accounts.register({ kind: 'guest' });
      const gone = await accounts.registerUser({ localpart: 'gone', password: 'pw', admin: false });
      await accounts.deactivateUser(gone);
      assert.equal(await accounts.countUsers(), base);
      assert.equal(await accounts.countUsers({ includeGuests: true, includeDeactivated: true }), all + 2);
    });

    test('authentication is cached: a token deleted behind the service keeps working until the cache is told', async () => {
      await accounts.registerUser({ localpart: 'cached', password: 'pw', admin: false });
      const { accessToken } = await login('cached', 'pw');
      const first = await accounts.authenticate(accessToken, request());
      assert.equal(first.userId, `@cached:${SERVER}`);
      await fx.database.db.deleteFrom('access_tokens').where('token_hash', '=', hashAccessToken(accessToken)).execute();
      assert.deepEqual(await accounts.authenticate(accessToken, request()), first);
      // A fresh service (empty cache), or one that does not trust entries at all, asks the database.
      await assert.rejects(fx.service().authenticate(accessToken, request()), { status: 401, errcode: 'M_UNKNOWN_TOKEN' });
      const uncached = fx.service({ tokenCache: { maxAgeMs: -1 } });
      const second = await login('cached', 'pw');
      await uncached.authenticate(second.accessToken, request());
      await fx.database.db.deleteFrom('access_tokens').where('token_hash', '=', hashAccessToken(second.accessToken)).execute();
      await assert.rejects(uncached.authenticate(second.accessToken, request()), { errcode: 'M_UNKNOWN_TOKEN' });
    });

    test('setAdmin changes what a cached token grants', async () => {
      const userId = await accounts.registerUser({ localpart: 'promoted', password: 'pw', admin: false });
      const { accessToken } = await login('promoted', 'pw');
      assert.equal((await accounts.authenticate(accessToken, request())).isAdmin, false);
      await accounts.setAdmin(userId, true);
      assert.equal((await accounts.authenticate(accessToken, request())).isAdmin, true);
      await assert.rejects(accounts.setAdmin(`@ghost:${SERVER}`, true), { status: 404 });
    });

    test('an expired token is 401 M_UNKNOWN_TOKEN with soft_logout', async () => {
      const userId = await accounts.registerUser({ localpart: 'expiring', password: 'pw', admin: false });
      await fx.database.db.insertInto('devices').values({ user_id: userId, device_id: 'EXP', display_name: null, created_ts: 0, last_seen_ts: null, last_seen_ip: null }).execute();
      await insertAccessToken(fx.database.db, hashAccessToken('expiring-token'), userId, 'EXP', fx.clock.now, fx.clock.now + 1000);
      assert.equal((await accounts.authenticate('expiring-token', request())).deviceId, 'EXP');
      fx.clock.now += 1000;
      await assert.rejects(accounts.authenticate('expiring-token', request()), (err: Record<string, unknown>) => {
        assert.equal(err['errcode'], 'M_UNKNOWN_TOKEN');
        assert.deepEqual(err['extra'], { soft_logout: true });
        return true;
      });
    });

    test("authentication records the device's last-seen time and address", async () => {
      await accounts.registerUser({ localpart: 'seen', password: 'pw', admin: false });
      const { accessToken, deviceId } = await login('seen', 'pw');
      await accounts.authenticate(accessToken, request('198.51.100.9'));
      let row;
      for (let i = 0; i < 50; i++) {
        row = await findDevice(fx.database.db, `@seen:${SERVER}`, deviceId);
        if (row?.last_seen_ts !== null) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(Number(row?.last_seen_ts), fx.clock.now);
      assert.equal(row?.last_seen_ip, '198.51.100.9');
      const [listed] = (await accounts.listDevices(`@seen:${SERVER}`)).filter((d) => d.deviceId === deviceId);
      assert.equal(listed?.lastSeenIp, '198.51.100.9');
    });

    test('setPassword (admin): logs every device out, or none', async () => {
      const userId = await accounts.registerUser({ localpart: 'reset', password: 'pw', admin: false });
      const a = await login('reset', 'pw');
      await accounts.setPassword(userId, 'pw2', false);
      assert.equal((await accounts.authenticate(a.accessToken, request())).userId, userId);
      await assert.rejects(login('reset', 'pw'), { errcode: 'M_FORBIDDEN' });
      await accounts.setPassword(userId, 'pw3', true);
      await assert.rejects(accounts.authenticate(a.accessToken, request()), { errcode: 'M_UNKNOWN_TOKEN' });
      assert.deepEqual(await accounts.listDevices(userId), []);
      assert.equal((await login('reset', 'pw3')).userId, userId);
      await assert.rejects(accounts.setPassword(`@ghost:${SERVER}`, 'x', true), { status: 404 });
    });

    test('deactivateUser: tokens and devices gone, hooks told, unknown user 404', async () => {
      const userId = await accounts.registerUser({ localpart: 'leaver', password: 'pw', admin: true });
      const a = await login('leaver', 'pw', { deviceId: 'LEAVER1' });
      await accounts.authenticate(a.accessToken, request());
      await accounts.deactivateUser(userId, { erase: false });
      await assert.rejects(accounts.authenticate(a.accessToken, request()), { errcode: 'M_UNKNOWN_TOKEN' });
      assert.deepEqual(devicesDeleted.at(-1), [userId, ['LEAVER1']]);
      assert.equal(await accounts.isAdmin(userId), false, 'a deactivated admin is no admin');
      assert.equal((await accounts.getAccount(userId))?.deactivated, true);
      await assert.rejects(login('leaver', 'pw'), { status: 403, errcode: 'M_USER_DEACTIVATED' });
      await assert.rejects(accounts.deactivateUser(`@ghost:${SERVER}`), { status: 404, errcode: 'M_NOT_FOUND' });
    });

    test('numeric localparts skip numbers already taken', async () => {
      const next = await fx.database.db.selectFrom('account_counters').select('value').where('name', '=', 'numeric_localpart').executeTakeFirst();
      const n = Number(next?.value ?? 0) + 1;
      await insertUser(fx.database.db, { userId: `@${n}:${SERVER}`, localpart: String(n), passwordHash: null, isAdmin: false, isGuest: false, createdTs: 0 });
      const guest = await accounts.register({ kind: 'guest' });
      assert.equal(guest.userId, `@${n + 1}:${SERVER}`);
      assert.equal((await accounts.getAccount(guest.userId))?.isGuest, true);
    });

    test('registration tokens: grammar, duplicates, limits, expiry', async () => {
      await assert.rejects(accounts.createRegistrationToken({ token: 'has space', usesAllowed: 1, expiryTime: null }), { errcode: 'M_INVALID_PARAM' });
      await assert.rejects(accounts.createRegistrationToken({ token: 'x'.repeat(65), usesAllowed: 1, expiryTime: null }), { errcode: 'M_INVALID_PARAM' });
      await assert.rejects(accounts.createRegistrationToken({ usesAllowed: -1, expiryTime: null }), { errcode: 'M_INVALID_PARAM' });
      const made = await accounts.createRegistrationToken({ token: 'Ab.9_~-', usesAllowed: 2, expiryTime: fx.clock.now + 5000 });
      assert.deepEqual(made, { token: 'Ab.9_~-', usesAllowed: 2, completed: 0, expiryTime: fx.clock.now + 5000, makesAdmin: false, createdTs: fx.clock.now });
      await assert.rejects(accounts.createRegistrationToken({ token: 'Ab.9_~-', usesAllowed: 1, expiryTime: null }), { errcode: 'M_INVALID_PARAM' });
      const generated = await accounts.createRegistrationToken({ usesAllowed: 0, expiryTime: null });
      assert.match(generated.token, /^[A-Za-z0-9]{16}$/);
      assert.equal(await accounts.registrationTokenValid(generated.token), false, 'zero uses admits nobody');
      assert.equal(await accounts.registrationTokenValid('Ab.9_~-'), true);
      fx.clock.now += 5000;
      assert.equal(await accounts.registrationTokenValid('Ab.9_~-'), false, 'expired');
      assert.ok((await accounts.listRegistrationTokens()).some((t) => t.token === 'Ab.9_~-'));
      assert.equal(await accounts.deleteRegistrationToken('Ab.9_~-'), true);
      assert.equal(await accounts.deleteRegistrationToken('Ab.9_~-'), false);
    });

    test('shared-secret nonces expire after a minute', async () => {
      const withSecret = fx.service({ registrationSharedSecret: 's' });
      const nonce = withSecret.sharedSecretNonce();
      fx.clock.now += 60_001;
      await assert.rejects(
        withSecret.sharedSecretRegister({ nonce, username: 'late', password: 'pw', admin: false, mac: 'irrelevant' }),
        { status: 400, errcode: 'M_UNKNOWN' },
      );
    });
  });

  describe(`first-start token on ${backend.name}`, { skip: backend.skip }, () => {
    let fx: AccountsFixture;
    before(async () => {
      fx = await accountsFixture(backend.create);
    });
    after(() => fx.close());

    test('a new token on each start while there are no accounts; earlier ones stop working; none afterwards', async () => {
      const accounts = fx.service({ registrationDisabled: true });
      const first = await accounts.firstStartToken();
      const second = await accounts.firstStartToken();
      assert.ok(first && second && first !== second);
      assert.equal(await accounts.registrationTokenValid(first), false);
      assert.equal(await accounts.registrationTokenValid(second), true);
      const token = await accounts.createRegistrationToken({ usesAllowed: 5, expiryTime: null });
      assert.equal((await accounts.firstStartToken()) !== null, true);
      assert.equal(await accounts.registrationTokenValid(token.token), true, 'tokens that grant no admin are left alone');
      await accounts.registerUser({ localpart: 'someone', password: 'pw', admin: false });
      assert.equal(await accounts.firstStartToken(), null);
    });
  });
}
