// The end-to-end keys routes over real HTTP, on SQLite and PostgreSQL: /keys/upload, /keys/query,
// /keys/claim (one-time keys once each, then the fallback key), /keys/changes, the key counts in
// /sync, and the checks of what clients send.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients } from '../sync/sync-client.js';

function deviceKeys(userId: string, deviceId: string, extra: object = {}): object {
  return {
    user_id: userId,
    device_id: deviceId,
    algorithms: ['m.olm.v1.curve25519-aes-sha2', 'm.megolm.v1.aes-sha2'],
    keys: { [`curve25519:${deviceId}`]: `curve-${deviceId}`, [`ed25519:${deviceId}`]: `ed-${deviceId}` },
    signatures: { [userId]: { [`ed25519:${deviceId}`]: 'self-signature' } },
    ...extra,
  };
}

function signedKey(id: string): object {
  return { key: `otk-${id}`, signatures: { '@x:y': { 'ed25519:D': 'sig' } } };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`keys routes on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('upload device keys and one-time keys; counts come back and show in sync', async () => {
      const alice = await user('alice');
      const { deviceId } = alice.user;
      const first = await alice.ok('POST', '/keys/upload', { device_keys: deviceKeys(alice.userId, deviceId) });
      assert.deepEqual(first, { one_time_key_counts: { signed_curve25519: 0 } });
      const up = await alice.ok('POST', '/keys/upload', {
        one_time_keys: { 'signed_curve25519:AAA': signedKey('a'), 'signed_curve25519:AAB': signedKey('b'), 'curve25519:CCC': 'plain' },
        fallback_keys: { 'signed_curve25519:FFF': { ...signedKey('f'), fallback: true } },
      });
      assert.deepEqual(up.one_time_key_counts, { signed_curve25519: 2, curve25519: 1 });
      // The same key again is fine; a different key under a used ID is not.
      await alice.ok('POST', '/keys/upload', { one_time_keys: { 'signed_curve25519:AAA': signedKey('a') } });
      const clash = await alice.call('POST', '/keys/upload', { one_time_keys: { 'signed_curve25519:AAA': signedKey('other') } });
      assert.equal(clash.status, 400);
      assert.equal(clash.body.errcode, 'M_INVALID_PARAM');
      const s = await alice.sync();
      assert.deepEqual(s.device_one_time_keys_count, { signed_curve25519: 2, curve25519: 1 });
      assert.deepEqual(s.device_unused_fallback_key_types, ['signed_curve25519']);
    });

    test('query returns local device keys with the display name; claim hands out each key once, then the fallback', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const { deviceId } = alice.user;
      await alice.ok('PUT', `/devices/${deviceId}`, { display_name: 'Alice phone' });
      await alice.ok('POST', '/keys/upload', {
        device_keys: deviceKeys(alice.userId, deviceId),
        one_time_keys: { 'signed_curve25519:K1': signedKey('1') },
        fallback_keys: { 'signed_curve25519:FB': signedKey('fb') },
      });

      const q = await bob.ok('POST', '/keys/query', { device_keys: { [alice.userId]: [], [bob.userId]: [] } });
      assert.deepEqual(q.device_keys[alice.userId][deviceId], {
        ...deviceKeys(alice.userId, deviceId),
        unsigned: { device_display_name: 'Alice phone' },
      });
      assert.deepEqual(q.device_keys[bob.userId], {}, 'bob uploaded nothing');
      assert.deepEqual(q.failures, {});
      const named = await bob.ok('POST', '/keys/query', { device_keys: { [alice.userId]: ['NOSUCH'] } });
      assert.deepEqual(named.device_keys[alice.userId], {});

      const claim = () => bob.ok('POST', '/keys/claim', { one_time_keys: { [alice.userId]: { [deviceId]: 'signed_curve25519' } } });
      const c1 = await claim();
      assert.deepEqual(c1.one_time_keys, { [alice.userId]: { [deviceId]: { 'signed_curve25519:K1': signedKey('1') } } });
      assert.deepEqual(c1.failures, {});
      const s1 = await alice.sync();
      assert.deepEqual(s1.device_one_time_keys_count, { signed_curve25519: 0 });
      assert.deepEqual(s1.device_unused_fallback_key_types, ['signed_curve25519']);
      // One-time keys gone: the fallback key, now marked used (and handed out again if asked).
      const c2 = await claim();
      assert.deepEqual(c2.one_time_keys[alice.userId][deviceId], { 'signed_curve25519:FB': signedKey('fb') });
      const s2 = await alice.sync();
      assert.deepEqual(s2.device_unused_fallback_key_types, []);
      assert.deepEqual((await claim()).one_time_keys[alice.userId][deviceId], { 'signed_curve25519:FB': signedKey('fb') });
      // An algorithm the device has no key for: nothing.
      const none = await bob.ok('POST', '/keys/claim', { one_time_keys: { [alice.userId]: { [deviceId]: 'other_alg' } } });
      assert.deepEqual(none.one_time_keys, {});
      // A new fallback key is unused again.
      await alice.ok('POST', '/keys/upload', { fallback_keys: { 'signed_curve25519:FB2': signedKey('fb2') } });
      assert.deepEqual((await alice.sync()).device_unused_fallback_key_types, ['signed_curve25519']);
    });

    test('keys of a deleted device are gone', async () => {
      const alice = await user('alice');
      const login = await alice.ok('POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: alice.userId }, password: 'secret' });
      const second = new Client(hs, { userId: alice.userId, accessToken: login.access_token, deviceId: login.device_id });
      await second.ok('POST', '/keys/upload', { device_keys: deviceKeys(alice.userId, login.device_id), one_time_keys: { 'signed_curve25519:X': 'x' } });
      let q = await alice.ok('POST', '/keys/query', { device_keys: { [alice.userId]: [] } });
      assert.deepEqual(Object.keys(q.device_keys[alice.userId]), [login.device_id]);
      await second.ok('POST', '/logout', {});
      q = await alice.ok('POST', '/keys/query', { device_keys: { [alice.userId]: [] } });
      assert.deepEqual(q.device_keys[alice.userId], {});
      const c = await alice.ok('POST', '/keys/claim', { one_time_keys: { [alice.userId]: { [login.device_id]: 'signed_curve25519' } } });
      assert.deepEqual(c.one_time_keys, {});
    });

    test('bad input is a clear 4xx', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const cases: [string, string, object, number, string][] = [
        ['POST', '/keys/upload', { device_keys: deviceKeys(bob.userId, alice.user.deviceId) }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { device_keys: deviceKeys(alice.userId, 'OTHERDEVICE') }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { device_keys: { ...deviceKeys(alice.userId, alice.user.deviceId), keys: { a: 1 } } }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { device_keys: 'nope' }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { one_time_keys: { nocolon: 'k' } }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { one_time_keys: { 'a:b': 5 } }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/upload', { one_time_keys: [] }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/query', {}, 400, 'M_BAD_JSON'],
        ['POST', '/keys/query', { device_keys: { 'not-a-user': [] } }, 400, 'M_INVALID_PARAM'],
        ['POST', '/keys/query', { device_keys: { [bob.userId]: 'x' } }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/claim', { one_time_keys: { [bob.userId]: { D: 5 } } }, 400, 'M_BAD_JSON'],
        ['POST', '/keys/claim', { one_time_keys: 3 }, 400, 'M_BAD_JSON'],
        ['GET', '/keys/changes', {}, 400, 'M_MISSING_PARAM'],
        ['GET', '/keys/changes?from=garbage', {}, 400, 'M_INVALID_PARAM'],
      ];
      for (const [method, path, body, status, errcode] of cases) {
        const r = await alice.call(method, path, method === 'GET' ? undefined : body);
        assert.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.errcode, errcode, `${method} ${path} ${JSON.stringify(body)}`);
      }
      const anon = await new HttpClient(hs.baseUrl).post('/keys/query', {});
      assert.equal(anon.status, 401);
    });

    test('device keys and signed keys are checked as the spec types them; timeout is an integer', async () => {
      const alice = await user('alice');
      const mine = deviceKeys(alice.userId, alice.user.deviceId) as Record<string, unknown>;
      const without = (field: string) => Object.fromEntries(Object.entries(mine).filter(([k]) => k !== field));
      const cases: [string, object, number, string][] = [];
      for (const field of ['signatures', 'algorithms', 'keys', 'user_id', 'device_id']) {
        cases.push([`keys/upload without device_keys.${field}`, { device_keys: without(field) }, 400, 'M_MISSING_PARAM']);
      }
      cases.push(
        ['keys/upload with signatures not an object', { device_keys: { ...mine, signatures: 'sig' } }, 400, 'M_BAD_JSON'],
        ['keys/upload with signatures not strings', { device_keys: { ...mine, signatures: { [alice.userId]: { 'ed25519:X': 1 } } } }, 400, 'M_BAD_JSON'],
        ['keys/upload with algorithms not strings', { device_keys: { ...mine, algorithms: [1] } }, 400, 'M_BAD_JSON'],
        ['keys/upload with device_id not a string', { device_keys: { ...mine, device_id: 7 } }, 400, 'M_BAD_JSON'],
        ['keys/upload with device_keys null', { device_keys: null }, 400, 'M_INVALID_PARAM'],
        ['a signed one-time key without its key', { one_time_keys: { 'signed_curve25519:A': { signatures: {} } } }, 400, 'M_BAD_JSON'],
        ['a signed one-time key without signatures', { one_time_keys: { 'signed_curve25519:A': { key: 'k' } } }, 400, 'M_BAD_JSON'],
        ['a fallback key whose fallback is no boolean', { fallback_keys: { 'signed_curve25519:F': { ...signedKey('f'), fallback: 'yes' } } }, 400, 'M_BAD_JSON'],
        ['a key ID with two colons', { one_time_keys: { 'a:b:c': 'k' } }, 400, 'M_BAD_JSON'],
      );
      for (const [what, body, status, errcode] of cases) {
        const r = await alice.call('POST', '/keys/upload', body);
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], `${what}: ${JSON.stringify(r.body)}`);
      }
      const q = await alice.ok('POST', '/keys/query', { device_keys: { [alice.userId]: [] } });
      assert.deepEqual(q.device_keys[alice.userId], {}, 'none of the bad device keys was stored');

      const wanted = { [alice.userId]: [] };
      for (const timeout of ['10s', 1.5, null, true]) {
        for (const path of ['/keys/query', '/keys/claim']) {
          const body = path === '/keys/query' ? { device_keys: wanted, timeout } : { one_time_keys: {}, timeout };
          const r = await alice.call('POST', path, body);
          assert.deepEqual([r.status, r.body.errcode], [400, 'M_BAD_JSON'], `${path} timeout ${JSON.stringify(timeout)}`);
        }
      }
      for (const timeout of ['soon', '-5', '1.5']) {
        const r = await alice.call('POST', `/keys/query?timeout=${timeout}`, { device_keys: wanted });
        assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], `?timeout=${timeout}`);
      }
      await alice.ok('POST', '/keys/query?timeout=5000', { device_keys: wanted, timeout: 10000 });
      await alice.ok('POST', '/keys/claim', { one_time_keys: {}, timeout: 0 });
    });

    test('remote users are reported under failures', async () => {
      const alice = await user('alice');
      const q = await alice.ok('POST', '/keys/query', { device_keys: { '@bob:elsewhere.example': [] } });
      assert.deepEqual(Object.keys(q.failures), ['elsewhere.example']);
      assert.deepEqual(q.device_keys, {});
    });

    test('/keys/changes lists users whose keys changed between two sync tokens', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const from = (await alice.sync()).next_batch;
      await bob.ok('POST', '/keys/upload', { device_keys: deviceKeys(bob.userId, bob.user.deviceId) });
      await carol.ok('POST', '/keys/upload', { device_keys: deviceKeys(carol.userId, carol.user.deviceId) });
      const to = (await alice.sync({ since: from })).next_batch;
      const changes = await alice.ok('GET', `/keys/changes?from=${from}&to=${to}`);
      assert.deepEqual(changes, { changed: [bob.userId], left: [] }, 'carol shares no room with alice');
      assert.deepEqual(await alice.ok('GET', `/keys/changes?from=${to}&to=${to}`), { changed: [], left: [] });
      await bob.leave(roomId);
      const later = await alice.ok('GET', `/keys/changes?from=${to}`);
      assert.deepEqual(later, { changed: [], left: [bob.userId] });
    });
  });
}
