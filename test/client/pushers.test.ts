// POST /pushers/set and GET /pushers over HTTP on SQLite and PostgreSQL: http pushers are set,
// updated, listed and removed per user; a pushkey moves between users unless appended; bad
// pushers are refused with the spec's errors; a pusher goes with the device that set it (logout,
// device deletion, logout everywhere) and all go with a deactivated account.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Reply } from '../e2e/support/client.js';
import { serverBackends, type TestServer, type TestUser, useTestServer } from '../support/server.js';

const V3 = '/_matrix/client/v3';
const URL_OK = 'https://push.example.org/_matrix/push/v1/notify';

/** A complete http pusher; `over` replaces or (with undefined) removes fields. */
function pusher(over: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    kind: 'http',
    app_id: 'org.example.app',
    app_display_name: 'Example',
    device_display_name: 'Phone',
    pushkey: 'key-1',
    lang: 'en',
    data: { url: URL_OK, format: 'event_id_only' },
  };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

function clientOf(hs: TestServer) {
  const call = (token: string, method: string, path: string, body?: unknown): Promise<Reply> => request(hs.baseUrl, method, V3 + path, body, { token });
  const set = async (token: string, body: unknown) => {
    const r = await call(token, 'POST', '/pushers/set', body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {});
  };
  const list = async (token: string) => {
    const r = await call(token, 'GET', '/pushers');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.pushers as any[];
  };
  const keys = async (token: string) => (await list(token)).map((p) => `${p.app_id}/${p.pushkey}`).sort();
  /** Logs the user in once more: a new device and token. */
  const login = async (u: TestUser, password: string) => {
    const r = await request(hs.baseUrl, 'POST', `${V3}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user: u.userId }, password });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return { userId: u.userId, accessToken: r.body.access_token as string, deviceId: r.body.device_id as string };
  };
  return { call, set, list, keys, login };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`pushers on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });
    const api = clientOf(hs);
    let n = 0;
    const newUser = (name: string) => hs.registerUser(`${name}${++n}`, 'secret');

    test('set, list, update and remove', async () => {
      const alice = await newUser('alice');
      const t = alice.accessToken;
      assert.deepEqual(await api.list(t), []);
      await api.set(t, pusher());
      assert.deepEqual(await api.list(t), [
        {
          app_display_name: 'Example',
          app_id: 'org.example.app',
          data: { url: URL_OK, format: 'event_id_only' },
          device_display_name: 'Phone',
          kind: 'http',
          lang: 'en',
          profile_tag: '',
          pushkey: 'key-1',
        },
      ]);
      // The same app_id and pushkey again: an update, not a second pusher.
      await api.set(t, pusher({ device_display_name: 'Renamed', profile_tag: 'tag', lang: 'fr', data: { url: 'http://gw.example/_chat/push/v1/notify?x=1' } }));
      const [updated] = await api.list(t);
      assert.deepEqual(
        [updated.device_display_name, updated.profile_tag, updated.lang, updated.data],
        ['Renamed', 'tag', 'fr', { url: 'http://gw.example/_chat/push/v1/notify?x=1' }],
      );
      await api.set(t, pusher({ pushkey: 'key-2' }));
      assert.deepEqual(await api.keys(t), ['org.example.app/key-1', 'org.example.app/key-2']);
      await api.set(t, { kind: null, app_id: 'org.example.app', pushkey: 'key-1' });
      assert.deepEqual(await api.keys(t), ['org.example.app/key-2']);
      // Removing what is not there is not an error.
      await api.set(t, { kind: null, app_id: 'org.example.app', pushkey: 'key-1' });
      const bob = await newUser('bob');
      assert.deepEqual(await api.list(bob.accessToken), []);
    });

    test('a pushkey set by another user moves to them, unless appended', async () => {
      const alice = await newUser('alice');
      const bob = await newUser('bob');
      const carol = await newUser('carol');
      const shared = pusher({ app_id: 'org.example.shared', pushkey: 'shared-key' });
      await api.set(alice.accessToken, shared);
      await api.set(bob.accessToken, { ...shared, append: true });
      assert.deepEqual(await api.keys(alice.accessToken), ['org.example.shared/shared-key']);
      assert.deepEqual(await api.keys(bob.accessToken), ['org.example.shared/shared-key']);
      await api.set(carol.accessToken, { ...shared, append: false });
      assert.deepEqual(await api.keys(alice.accessToken), []);
      assert.deepEqual(await api.keys(bob.accessToken), []);
      assert.deepEqual(await api.keys(carol.accessToken), ['org.example.shared/shared-key']);
    });

    test('bad pushers are refused with the spec errors, and nothing is stored', async () => {
      const alice = await newUser('alice');
      const t = alice.accessToken;
      const cases: [Record<string, unknown>, number, string][] = [
        ...['kind', 'app_id', 'app_display_name', 'device_display_name', 'pushkey', 'lang', 'data'].map(
          (k): [Record<string, unknown>, number, string] => [pusher({ [k]: undefined }), 400, 'M_MISSING_PARAM'],
        ),
        [{ kind: null, pushkey: 'key-1' }, 400, 'M_MISSING_PARAM'],
        [pusher({ data: {} }), 400, 'M_MISSING_PARAM'],
        [pusher({ data: { url: 'ftp://push.example.org/_matrix/push/v1/notify' } }), 400, 'M_INVALID_PARAM'],
        [pusher({ data: { url: 'https://push.example.org/notify' } }), 400, 'M_INVALID_PARAM'],
        [pusher({ data: { url: 'https://push.example.org/_matrix/push/v1/notify/extra' } }), 400, 'M_INVALID_PARAM'],
        [pusher({ data: { url: '/_matrix/push/v1/notify' } }), 400, 'M_INVALID_PARAM'],
        [pusher({ data: { url: 42 } }), 400, 'M_INVALID_PARAM'],
        [pusher({ data: { url: URL_OK, format: 1 } }), 400, 'M_INVALID_PARAM'],
        [pusher({ kind: 'email', pushkey: 'alice@example.org' }), 400, 'M_THREEPID_NOT_FOUND'],
        [pusher({ kind: 'carrier-pigeon' }), 400, 'M_INVALID_PARAM'],
        [pusher({ app_id: 'a'.repeat(65) }), 400, 'M_INVALID_PARAM'],
        [pusher({ pushkey: 'é'.repeat(257) }), 400, 'M_INVALID_PARAM'],
        [pusher({ pushkey: 7 }), 400, 'M_BAD_JSON'],
        [pusher({ data: 'https://push.example.org' }), 400, 'M_BAD_JSON'],
        [pusher({ append: 'yes' }), 400, 'M_BAD_JSON'],
      ];
      for (const [body, status, errcode] of cases) {
        const r = await api.call(t, 'POST', '/pushers/set', body);
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], JSON.stringify(body));
      }
      const notJson = await request(hs.baseUrl, 'POST', `${V3}/pushers/set`, undefined, { token: t, rawBody: 'kind=http' });
      assert.deepEqual([notJson.status, notJson.body.errcode], [400, 'M_NOT_JSON']);
      assert.deepEqual(await api.list(t), []);
      // The limits themselves are accepted.
      await api.set(t, pusher({ app_id: 'a'.repeat(64), pushkey: 'é'.repeat(256) }));
      assert.equal((await api.list(t)).length, 1);
    });

    test('a pusher goes with the device that set it: logout, deletion, logout everywhere', async () => {
      const alice = await newUser('alice');
      const phone = await api.login(alice, 'secret');
      const tablet = await api.login(alice, 'secret');
      await api.set(alice.accessToken, pusher({ pushkey: 'first' }));
      await api.set(phone.accessToken, pusher({ pushkey: 'phone' }));
      await api.set(tablet.accessToken, pusher({ pushkey: 'tablet' }));
      // An update from another device leaves the pusher with the device that set it.
      await api.set(phone.accessToken, pusher({ pushkey: 'first', device_display_name: 'Updated from the phone' }));
      assert.deepEqual(await api.keys(alice.accessToken), ['org.example.app/first', 'org.example.app/phone', 'org.example.app/tablet']);

      assert.equal((await api.call(phone.accessToken, 'POST', '/logout', {})).status, 200);
      assert.deepEqual(await api.keys(alice.accessToken), ['org.example.app/first', 'org.example.app/tablet']);

      const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: alice.userId }, password: 'secret' };
      const deleted = await api.call(alice.accessToken, 'DELETE', `/devices/${encodeURIComponent(tablet.deviceId)}`, { auth });
      assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
      assert.deepEqual(await api.keys(alice.accessToken), ['org.example.app/first']);

      const laptop = await api.login(alice, 'secret');
      assert.equal((await api.call(laptop.accessToken, 'POST', '/logout/all', {})).status, 200);
      const again = await api.login(alice, 'secret');
      assert.deepEqual(await api.list(again.accessToken), []);
    });

    test('deactivating the account removes its pushers', async () => {
      const alice = await newUser('alice');
      const phone = await api.login(alice, 'secret');
      await api.set(alice.accessToken, pusher({ pushkey: 'a' }));
      await api.set(phone.accessToken, pusher({ pushkey: 'b' }));
      const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: alice.userId }, password: 'secret' };
      const r = await api.call(alice.accessToken, 'POST', '/account/deactivate', { auth });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const rows = await hs.server.core.db.selectFrom('pushers').select('pushkey').where('user_id', '=', alice.userId).execute();
      assert.deepEqual(rows, []);
    });

    describe('who may call', () => {
      let guestToken: string;
      before(async () => {
        guestToken = (await request(hs.baseUrl, 'POST', `${V3}/register?kind=guest`, {})).body.access_token;
      });
      test('guests are refused; no token is 401', async () => {
        for (const [method, path, body] of [
          ['GET', '/pushers', undefined],
          ['POST', '/pushers/set', pusher()],
        ] as const) {
          const guest = await api.call(guestToken, method, path, body);
          assert.deepEqual([guest.status, guest.body.errcode], [403, 'M_GUEST_ACCESS_FORBIDDEN'], path);
          const anonymous = await request(hs.baseUrl, method, V3 + path, body);
          assert.deepEqual([anonymous.status, anonymous.body.errcode], [401, 'M_MISSING_TOKEN'], path);
        }
      });
    });
  });
}
