// The admin API's user endpoints over HTTP on SQLite and PostgreSQL, under both admin prefixes:
// accounts (list, read, create, modify, deactivate, reset password, admin flag), devices, joined
// rooms, login as a user, rate-limit overrides, registration tokens and the server version.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';

const enc = encodeURIComponent;
const PREFIXES = ['/_synapse/admin', '/_ext/admin'] as const;
const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`admin API user endpoints on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { rate_limiting: { enabled: true, message: { per_second: 0.001, burst_count: 1 } } } } });
    let admin: TestUser;
    let alice: TestUser;
    let bob: TestUser;
    const as = (who: TestUser | null) => ({ token: who === null ? null : who.accessToken });
    const call = (method: string, path: string, body?: unknown, who: TestUser | null = admin, prefix: string = PREFIXES[0]) =>
      request(hs.baseUrl, method, `${prefix}${path}`, body, as(who));
    const err = (r: { status: number; body: any }) => [r.status, r.body?.errcode];
    const login = (user: string, password: string) =>
      request(hs.baseUrl, 'POST', `${V3}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user }, password });

    before(async () => {
      admin = await hs.registerUser('root', 'root-pw', { admin: true });
      alice = await hs.registerUser('alice', 'alice-pw');
      bob = await hs.registerUser('bob', 'bob-pw');
    });

    test('every endpoint wants an admin: 401 without a token, 403 for others, under both prefixes', async () => {
      const paths: [string, string, unknown?][] = [
        ['GET', '/v2/users'],
        ['GET', `/v2/users/${enc(alice.userId)}`],
        ['PUT', `/v2/users/${enc('@x:localhost')}`, {}],
        ['POST', `/v1/deactivate/${enc(bob.userId)}`, {}],
        ['POST', `/v1/reset_password/${enc(bob.userId)}`, { new_password: 'x' }],
        ['GET', `/v2/users/${enc(bob.userId)}/devices`],
        ['POST', `/v2/users/${enc(bob.userId)}/delete_devices`, { devices: [] }],
        ['GET', `/v1/users/${enc(bob.userId)}/joined_rooms`],
        ['GET', `/v1/users/${enc(bob.userId)}/pushers`],
        ['POST', `/v1/users/${enc(bob.userId)}/login`, {}],
        ['GET', `/v1/users/${enc(bob.userId)}/override_ratelimit`],
        ['GET', `/v1/users/${enc(bob.userId)}/admin`],
        ['GET', '/v1/registration_tokens'],
        ['POST', '/v1/registration_tokens/new', {}],
      ];
      for (const prefix of PREFIXES) {
        for (const [method, path, body] of paths) {
          assert.deepEqual(err(await call(method, path, body, null, prefix)), [401, 'M_MISSING_TOKEN'], `${method} ${prefix}${path}`);
          assert.deepEqual(err(await call(method, path, body, alice, prefix)), [403, 'M_FORBIDDEN'], `${method} ${prefix}${path}`);
        }
        const ok = await call('GET', `/v2/users/${enc(alice.userId)}`, undefined, admin, prefix);
        assert.equal(ok.status, 200);
      }
    });

    test('server_version', async () => {
      for (const prefix of PREFIXES) {
        const r = await call('GET', '/v1/server_version', undefined, null, prefix);
        assert.equal(r.status, 200);
        assert.match(r.body.server_version, /^Hearth /);
      }
    });

    test('GET /v2/users/{userId}: the user object; 404 unknown, 400 remote or malformed', async () => {
      const r = await call('GET', `/v2/users/${enc(alice.userId)}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.name, alice.userId);
      assert.equal(r.body.displayname, 'alice');
      assert.equal(r.body.admin, false);
      assert.equal(r.body.deactivated, false);
      assert.equal(r.body.is_guest, false);
      assert.deepEqual(r.body.threepids, []);
      assert.deepEqual(r.body.external_ids, []);
      assert.equal(r.body.user_type, null);
      assert.equal(typeof r.body.creation_ts, 'number');
      assert.deepEqual(err(await call('GET', `/v2/users/${enc('@nobody:localhost')}`)), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', `/v2/users/${enc('@alice:elsewhere')}`)), [400, 'M_INVALID_PARAM']);
      assert.equal((await call('GET', `/v2/users/not-a-user-id`)).status, 400);
    });

    test('GET /v2/users: filters, order, paging; bad parameters are 400 M_INVALID_PARAM', async () => {
      const all = await call('GET', '/v2/users');
      assert.equal(all.status, 200);
      const names = all.body.users.map((u: any) => u.name);
      assert.ok([admin.userId, alice.userId, bob.userId].every((n) => names.includes(n)));
      assert.equal(all.body.total, names.length);
      assert.equal(all.body.next_token, undefined);
      const page = await call('GET', '/v2/users?limit=1&order_by=name&dir=b');
      assert.equal(page.body.users.length, 1);
      assert.equal(page.body.next_token, '1');
      const sortedDesc = [...names].sort().reverse();
      assert.equal(page.body.users[0].name, sortedDesc[0]);
      const next = await call('GET', `/v2/users?limit=1&order_by=name&dir=b&from=${page.body.next_token}`);
      assert.equal(next.body.users[0].name, sortedDesc[1]);
      const admins = await call('GET', '/v2/users?admins=true');
      assert.deepEqual(admins.body.users.map((u: any) => u.name), [admin.userId]);
      const byId = await call('GET', `/v2/users?user_id=ali`);
      assert.deepEqual(byId.body.users.map((u: any) => u.name), [alice.userId]);
      const byName = await call('GET', `/v2/users?name=BO`);
      assert.deepEqual(byName.body.users.map((u: any) => u.name), [bob.userId]);
      const byCreation = await call('GET', '/v2/users?order_by=creation_ts');
      assert.equal(byCreation.status, 200);
      for (const q of ['order_by=password', 'dir=x', 'from=-1', 'limit=abc', 'guests=maybe', 'deactivated=1']) {
        assert.deepEqual(err(await call('GET', `/v2/users?${q}`)), [400, 'M_INVALID_PARAM'], q);
      }
    });

    test('PUT /v2/users/{userId}: creates (201) and modifies (200)', async () => {
      const carol = '@carol:localhost';
      const created = await call('PUT', `/v2/users/${enc(carol)}`, {
        password: 'carol-pw',
        displayname: 'Carol',
        avatar_url: 'mxc://localhost/abc',
        threepids: [{ medium: 'email', address: 'Carol@Example.org' }],
        external_ids: [{ auth_provider: 'oidc', external_id: 'c-1' }],
        user_type: 'bot',
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.name, carol);
      assert.equal(created.body.displayname, 'Carol');
      assert.equal(created.body.avatar_url, 'mxc://localhost/abc');
      assert.deepEqual(created.body.threepids.map((t: any) => [t.medium, t.address]), [['email', 'carol@example.org']]);
      assert.deepEqual(created.body.external_ids, [{ auth_provider: 'oidc', external_id: 'c-1' }]);
      assert.equal(created.body.user_type, 'bot');
      assert.equal((await login('carol', 'carol-pw')).status, 200);

      const changed = await call('PUT', `/v2/users/${enc(carol)}`, { displayname: 'Carol C', admin: true, password: 'carol-pw-2', logout_devices: false, threepids: [] });
      assert.equal(changed.status, 200);
      assert.equal(changed.body.displayname, 'Carol C');
      assert.equal(changed.body.admin, true);
      assert.deepEqual(changed.body.threepids, []);
      assert.equal((await login('carol', 'carol-pw-2')).status, 200);
      const profile = await request(hs.baseUrl, 'GET', `${V3}/profile/${enc(carol)}`);
      assert.equal(profile.body.displayname, 'Carol C');

      // Deactivation, then reactivation, which needs a password.
      const off = await call('PUT', `/v2/users/${enc(carol)}`, { deactivated: true });
      assert.equal(off.body.deactivated, true);
      assert.deepEqual(off.body.external_ids, []);
      assert.equal((await login('carol', 'carol-pw-2')).status, 403);
      assert.deepEqual(err(await call('PUT', `/v2/users/${enc(carol)}`, { deactivated: false })), [400, 'M_MISSING_PARAM']);
      const on = await call('PUT', `/v2/users/${enc(carol)}`, { deactivated: false, password: 'carol-pw-3' });
      assert.equal(on.body.deactivated, false);
      assert.equal((await login('carol', 'carol-pw-3')).status, 200);
    });

    test('PUT /v2/users/{userId}: bad input', async () => {
      const dave = enc('@dave:localhost');
      for (const body of [{ admin: 'yes' }, { deactivated: 1 }, { password: 5 }, { displayname: 3 }, { threepids: 'x' }, { threepids: [{ medium: 'email' }] }, { external_ids: [{}] }, { user_type: 'wizard' }, { password: 'x'.repeat(513) }]) {
        assert.deepEqual(err(await call('PUT', `/v2/users/${dave}`, body)), [400, 'M_INVALID_PARAM'], JSON.stringify(body));
      }
      assert.deepEqual(err(await call('PUT', `/v2/users/${enc('@dave:elsewhere')}`, {})), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('PUT', `/v2/users/${enc('@Dave:localhost')}`, { password: 'pw' })), [400, 'M_INVALID_USERNAME']);
      assert.equal((await call('GET', `/v2/users/${dave}`)).status, 404);
      assert.deepEqual(err(await call('PUT', `/v2/users/${enc(admin.userId)}`, { admin: false })), [400, 'M_UNKNOWN']);
      // A third-party identifier belongs to one user.
      await call('PUT', `/v2/users/${enc(alice.userId)}`, { threepids: [{ medium: 'email', address: 'a@example.org' }] });
      assert.deepEqual(err(await call('PUT', `/v2/users/${enc(bob.userId)}`, { threepids: [{ medium: 'email', address: 'a@example.org' }] })), [400, 'M_INVALID_PARAM']);
      const raw = await request(hs.baseUrl, 'PUT', `/_synapse/admin/v2/users/${dave}`, undefined, { token: admin.accessToken, rawBody: '{not json', headers: { 'content-type': 'application/json' } });
      assert.equal(raw.status, 400);
      assert.match(raw.body.errcode, /^M_(NOT|BAD)_JSON$/);
    });

    test('reset_password and the admin flag', async () => {
      const erin = await hs.registerUser('erin', 'erin-pw');
      assert.deepEqual(err(await call('POST', `/v1/reset_password/${enc(erin.userId)}`, {})), [400, 'M_MISSING_PARAM']);
      assert.deepEqual(err(await call('POST', `/v1/reset_password/${enc(erin.userId)}`, { new_password: 7 })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('POST', `/v1/reset_password/${enc(erin.userId)}`, { new_password: 'x', logout_devices: 'no' })), [400, 'M_BAD_JSON']);
      assert.deepEqual(err(await call('POST', `/v1/reset_password/${enc('@ghost:localhost')}`, { new_password: 'x' })), [404, 'M_NOT_FOUND']);
      const kept = await call('POST', `/v1/reset_password/${enc(erin.userId)}`, { new_password: 'erin-pw-2', logout_devices: false });
      assert.deepEqual([kept.status, kept.body], [200, {}]);
      assert.equal((await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, as(erin))).status, 200);
      await call('POST', `/v1/reset_password/${enc(erin.userId)}`, { new_password: 'erin-pw-3' });
      assert.equal((await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, as(erin))).status, 401);
      assert.equal((await login('erin', 'erin-pw-3')).status, 200);

      assert.deepEqual((await call('GET', `/v1/users/${enc(erin.userId)}/admin`)).body, { admin: false });
      assert.deepEqual([(await call('PUT', `/v1/users/${enc(erin.userId)}/admin`, { admin: true })).status], [200]);
      assert.deepEqual((await call('GET', `/v1/users/${enc(erin.userId)}/admin`)).body, { admin: true });
      assert.deepEqual(err(await call('PUT', `/v1/users/${enc(erin.userId)}/admin`, {})), [400, 'M_MISSING_PARAM']);
      assert.deepEqual(err(await call('PUT', `/v1/users/${enc(erin.userId)}/admin`, { admin: 'yes' })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('PUT', `/v1/users/${enc(admin.userId)}/admin`, { admin: false })), [400, 'M_UNKNOWN']);
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@ghost:localhost')}/admin`)), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@erin:elsewhere')}/admin`)), [400, 'M_INVALID_PARAM']);
    });

    test('devices: list, read, rename, delete one, delete several', async () => {
      const frank = await hs.registerUser('frank', 'frank-pw');
      const second = await login('frank', 'frank-pw');
      const third = await login('frank', 'frank-pw');
      const u = enc(frank.userId);
      const list = await call('GET', `/v2/users/${u}/devices`);
      assert.equal(list.body.total, 3);
      assert.ok(list.body.devices.every((d: any) => d.user_id === frank.userId && 'last_seen_ts' in d));
      const one = await call('GET', `/v2/users/${u}/devices/${enc(frank.deviceId)}`);
      assert.equal(one.body.device_id, frank.deviceId);
      assert.deepEqual(err(await call('GET', `/v2/users/${u}/devices/NOPE`)), [404, 'M_NOT_FOUND']);
      assert.equal((await call('PUT', `/v2/users/${u}/devices/${enc(frank.deviceId)}`, { display_name: 'Phone' })).status, 200);
      assert.equal((await call('GET', `/v2/users/${u}/devices/${enc(frank.deviceId)}`)).body.display_name, 'Phone');
      assert.deepEqual(err(await call('PUT', `/v2/users/${u}/devices/NOPE`, { display_name: 'x' })), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('PUT', `/v2/users/${u}/devices/${enc(frank.deviceId)}`, { display_name: 5 })), [400, 'M_INVALID_PARAM']);
      assert.equal((await call('DELETE', `/v2/users/${u}/devices/${enc(second.body.device_id)}`)).status, 200);
      assert.equal((await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, { token: second.body.access_token })).status, 401);
      assert.deepEqual(err(await call('POST', `/v2/users/${u}/delete_devices`, {})), [400, 'M_MISSING_PARAM']);
      assert.deepEqual(err(await call('POST', `/v2/users/${u}/delete_devices`, { devices: [1] })), [400, 'M_INVALID_PARAM']);
      assert.equal((await call('POST', `/v2/users/${u}/delete_devices`, { devices: [third.body.device_id, 'UNKNOWN'] })).status, 200);
      assert.deepEqual((await call('GET', `/v2/users/${u}/devices`)).body.devices.map((d: any) => d.device_id), [frank.deviceId]);
      assert.deepEqual(err(await call('GET', `/v2/users/${enc('@ghost:localhost')}/devices`)), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', `/v2/users/${enc('@frank:elsewhere')}/devices`)), [400, 'M_INVALID_PARAM']);
    });

    test("a user's pushers", async () => {
      const ivy = await hs.registerUser('ivy', 'ivy-pw');
      assert.deepEqual((await call('GET', `/v1/users/${enc(ivy.userId)}/pushers`)).body, { pushers: [], total: 0 });
      const pusher = {
        kind: 'http',
        app_id: 'org.example.app',
        app_display_name: 'Example',
        device_display_name: 'Phone',
        pushkey: 'ivy-key',
        lang: 'en',
        data: { url: 'https://push.example.org/_matrix/push/v1/notify' },
      };
      assert.equal((await request(hs.baseUrl, 'POST', `${V3}/pushers/set`, pusher, as(ivy))).status, 200);
      const listed = await call('GET', `/v1/users/${enc(ivy.userId)}/pushers`, undefined, admin, PREFIXES[1]);
      assert.deepEqual(listed.body, { pushers: [{ ...pusher, profile_tag: '' }], total: 1 });
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@ghost:localhost')}/pushers`)), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@ivy:elsewhere')}/pushers`)), [400, 'M_INVALID_PARAM']);
    });

    test('joined_rooms, and deactivation (with erase) leaves them', async () => {
      const gina = await hs.registerUser('gina', 'gina-pw');
      const room = await request(hs.baseUrl, 'POST', `${V3}/createRoom`, {}, as(gina));
      assert.equal(room.status, 200);
      const joined = await call('GET', `/v1/users/${enc(gina.userId)}/joined_rooms`);
      assert.deepEqual(joined.body, { joined_rooms: [room.body.room_id], total: 1 });
      assert.deepEqual(err(await call('POST', `/v1/deactivate/${enc(gina.userId)}`, { erase: 'yes' })), [400, 'M_BAD_JSON']);
      assert.deepEqual(err(await call('POST', `/v1/deactivate/${enc('@ghost:localhost')}`, {})), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('POST', `/v1/deactivate/${enc('@gina:elsewhere')}`, {})), [400, 'M_INVALID_PARAM']);
      const off = await call('POST', `/v1/deactivate/${enc(gina.userId)}`, { erase: true }, admin, PREFIXES[1]);
      assert.deepEqual([off.status, off.body], [200, { id_server_unbind_result: 'success' }]);
      const details = await call('GET', `/v2/users/${enc(gina.userId)}`);
      assert.equal(details.body.deactivated, true);
      assert.equal(details.body.erased, true);
      assert.deepEqual((await call('GET', `/v1/users/${enc(gina.userId)}/joined_rooms`)).body, { joined_rooms: [], total: 0 });
      assert.equal((await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, as(gina))).status, 401);
      const listed = await call('GET', '/v2/users?deactivated=true&user_id=gina');
      assert.deepEqual(listed.body.users.map((u: any) => [u.name, u.deactivated]), [[gina.userId, true]]);
      assert.deepEqual((await call('GET', '/v2/users?user_id=gina')).body.users, []);
    });

    test('login as a user: a token for them, not for oneself; valid_until_ms checked', async () => {
      const r = await call('POST', `/v1/users/${enc(bob.userId)}/login`, { valid_until_ms: Date.now() + 60_000 });
      assert.equal(r.status, 200);
      const who = await request(hs.baseUrl, 'GET', `${V3}/account/whoami`, undefined, { token: r.body.access_token });
      assert.equal(who.body.user_id, bob.userId);
      assert.deepEqual(err(await call('POST', `/v1/users/${enc(admin.userId)}/login`, {})), [400, 'M_UNKNOWN']);
      assert.deepEqual(err(await call('POST', `/v1/users/${enc(bob.userId)}/login`, { valid_until_ms: 'soon' })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('POST', `/v1/users/${enc(bob.userId)}/login`, { valid_until_ms: 1000 })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('POST', `/v1/users/${enc('@ghost:localhost')}/login`, {})), [404, 'M_NOT_FOUND']);
    });

    test('override_ratelimit: stored, read, deleted, and honoured by the limiter', async () => {
      const hank = await hs.registerUser('hank', 'hank-pw');
      const u = enc(hank.userId);
      const room = await request(hs.baseUrl, 'POST', `${V3}/createRoom`, {}, as(hank));
      const send = (n: number) => request(hs.baseUrl, 'PUT', `${V3}/rooms/${enc(room.body.room_id)}/send/m.room.message/t${n}`, { msgtype: 'm.text', body: 'hi' }, as(hank));
      // The configured limit: one message, then 429.
      assert.equal((await send(1)).status, 200);
      assert.equal((await send(2)).status, 429);
      assert.deepEqual((await call('GET', `/v1/users/${u}/override_ratelimit`)).body, {});
      const set = await call('POST', `/v1/users/${u}/override_ratelimit`, {});
      assert.deepEqual([set.status, set.body], [200, { messages_per_second: 0, burst_count: 0 }]);
      for (let i = 3; i < 8; i++) assert.equal((await send(i)).status, 200);
      await call('POST', `/v1/users/${u}/override_ratelimit`, { messages_per_second: 1, burst_count: 2 });
      assert.deepEqual((await call('GET', `/v1/users/${u}/override_ratelimit`)).body, { messages_per_second: 1, burst_count: 2 });
      assert.equal((await call('DELETE', `/v1/users/${u}/override_ratelimit`)).status, 200);
      assert.deepEqual((await call('GET', `/v1/users/${u}/override_ratelimit`)).body, {});
      assert.equal((await send(9)).status, 429);
      assert.deepEqual(err(await call('POST', `/v1/users/${u}/override_ratelimit`, { messages_per_second: -1 })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('POST', `/v1/users/${u}/override_ratelimit`, { burst_count: 'x' })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@ghost:localhost')}/override_ratelimit`)), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', `/v1/users/${enc('@hank:elsewhere')}/override_ratelimit`)), [400, 'M_INVALID_PARAM']);
    });

    test('registration tokens: create, list, read, update, delete', async () => {
      const made = await call('POST', '/v1/registration_tokens/new', { token: 'abc-1', uses_allowed: 2 });
      assert.deepEqual([made.status, made.body], [200, { token: 'abc-1', uses_allowed: 2, pending: 0, completed: 0, expiry_time: null }]);
      const generated = await call('POST', '/v1/registration_tokens/new', { length: 5 });
      assert.match(generated.body.token, /^[A-Za-z0-9]{5}$/);
      assert.deepEqual(err(await call('POST', '/v1/registration_tokens/new', { token: 'abc-1' })), [400, 'M_INVALID_PARAM']);
      for (const body of [{ token: 'bad token' }, { token: 5 }, { length: 0 }, { length: 65 }, { uses_allowed: -1 }, { uses_allowed: 1.5 }, { expiry_time: 1000 }, { expiry_time: 'x' }]) {
        assert.deepEqual(err(await call('POST', '/v1/registration_tokens/new', body)), [400, 'M_INVALID_PARAM'], JSON.stringify(body));
      }
      const list = await call('GET', '/v1/registration_tokens');
      assert.ok(list.body.registration_tokens.some((t: any) => t.token === 'abc-1'));
      assert.deepEqual(err(await call('GET', '/v1/registration_tokens?valid=maybe')), [400, 'M_INVALID_PARAM']);
      const future = Date.now() + 3_600_000;
      const updated = await call('PUT', '/v1/registration_tokens/abc-1', { uses_allowed: 0, expiry_time: future });
      assert.deepEqual(updated.body, { token: 'abc-1', uses_allowed: 0, pending: 0, completed: 0, expiry_time: future });
      const invalid = await call('GET', '/v1/registration_tokens?valid=false');
      assert.ok(invalid.body.registration_tokens.some((t: any) => t.token === 'abc-1'));
      const valid = await call('GET', '/v1/registration_tokens?valid=true');
      assert.ok(!valid.body.registration_tokens.some((t: any) => t.token === 'abc-1'));
      assert.deepEqual((await call('GET', '/v1/registration_tokens/abc-1', undefined, admin, PREFIXES[1])).body.uses_allowed, 0);
      assert.deepEqual(err(await call('PUT', '/v1/registration_tokens/abc-1', { uses_allowed: 'x' })), [400, 'M_INVALID_PARAM']);
      assert.deepEqual(err(await call('PUT', '/v1/registration_tokens/nope', {})), [404, 'M_NOT_FOUND']);
      assert.deepEqual(err(await call('GET', '/v1/registration_tokens/nope')), [404, 'M_NOT_FOUND']);
      assert.equal((await call('DELETE', '/v1/registration_tokens/abc-1')).status, 200);
      assert.deepEqual(err(await call('DELETE', '/v1/registration_tokens/abc-1')), [404, 'M_NOT_FOUND']);
    });
  });
}
