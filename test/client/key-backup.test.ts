// Server-side key backup over real HTTP, on SQLite and PostgreSQL: versions (create, read, update,
// delete), keys under /room_keys/keys, /room_keys/keys/{roomId} and /room_keys/keys/{roomId}/{sessionId},
// the current-version rule, which copy of a session is kept, etags and counts, and bad input.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, type Client } from '../sync/sync-client.js';

const ALGORITHM = 'm.megolm_backup.v1.curve25519-aes-sha2';
const ROOM = '!room:localhost';
const OTHER_ROOM = '!other:localhost';

function authData(publicKey: string): object {
  return { public_key: publicKey, signatures: { '@someone:localhost': { 'ed25519:DEV': 'sig' } } };
}

function keyData(firstMessageIndex: number, forwardedCount: number, isVerified: boolean, tag: string): object {
  return {
    first_message_index: firstMessageIndex,
    forwarded_count: forwardedCount,
    is_verified: isVerified,
    session_data: { ephemeral: `eph-${tag}`, ciphertext: `ct-${tag}`, mac: `mac-${tag}` },
  };
}

async function createVersion(c: Client, publicKey = 'pk1'): Promise<string> {
  const r = await c.ok('POST', '/room_keys/version', { algorithm: ALGORITHM, auth_data: authData(publicKey) });
  assert.equal(typeof r.version, 'string');
  return r.version;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`key backup on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('versions: none at first, created, read, updated, deleted; numbers are not reused', async () => {
      const alice = await user('alice');
      const none = await alice.call('GET', '/room_keys/version');
      assert.deepEqual([none.status, none.body.errcode], [404, 'M_NOT_FOUND']);

      const v1 = await createVersion(alice, 'pk1');
      const info = await alice.ok('GET', '/room_keys/version');
      assert.deepEqual(info, { algorithm: ALGORITHM, auth_data: authData('pk1'), count: 0, etag: info.etag, version: v1 });
      assert.equal(typeof info.etag, 'string');
      assert.deepEqual(await alice.ok('GET', `/room_keys/version/${v1}`), info);

      // Another user sees none of it.
      const bob = await user('bob');
      assert.equal((await bob.call('GET', '/room_keys/version')).status, 404);
      assert.equal((await bob.call('GET', `/room_keys/version/${v1}`)).status, 404);

      const v2 = await createVersion(alice, 'pk2');
      assert.notEqual(v2, v1);
      assert.equal((await alice.ok('GET', '/room_keys/version')).version, v2, 'the newest is current');
      assert.equal((await alice.ok('GET', `/room_keys/version/${v1}`)).auth_data.public_key, 'pk1', 'older versions stay readable');

      // auth_data of any live version may change; algorithm and version must match.
      await alice.ok('PUT', `/room_keys/version/${v1}`, { algorithm: ALGORITHM, auth_data: authData('pk1b') });
      assert.equal((await alice.ok('GET', `/room_keys/version/${v1}`)).auth_data.public_key, 'pk1b');
      await alice.ok('PUT', `/room_keys/version/${v2}`, { algorithm: ALGORITHM, auth_data: authData('pk2b'), version: v2 });
      assert.equal((await alice.ok('GET', '/room_keys/version')).auth_data.public_key, 'pk2b');
      const cases: [string, object, number, string][] = [
        [v2, { algorithm: ALGORITHM, auth_data: authData('x'), version: v1 }, 400, 'M_INVALID_PARAM'],
        [v2, { algorithm: 'other.algorithm', auth_data: authData('x') }, 400, 'M_INVALID_PARAM'],
        [v2, { auth_data: authData('x') }, 400, 'M_MISSING_PARAM'],
        [v2, { algorithm: ALGORITHM, auth_data: 'x' }, 400, 'M_BAD_JSON'],
        ['999', { algorithm: ALGORITHM, auth_data: authData('x') }, 404, 'M_NOT_FOUND'],
        ['abc', { algorithm: ALGORITHM, auth_data: authData('x') }, 404, 'M_NOT_FOUND'],
      ];
      for (const [version, body, status, errcode] of cases) {
        const r = await alice.call('PUT', `/room_keys/version/${version}`, body);
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], `${version} ${JSON.stringify(body)}`);
      }

      // Deleting the current version makes the one before current; deleting twice is fine.
      assert.deepEqual(await alice.ok('DELETE', `/room_keys/version/${v2}`), {});
      assert.deepEqual(await alice.ok('DELETE', `/room_keys/version/${v2}`), {});
      assert.equal((await alice.call('GET', `/room_keys/version/${v2}`)).status, 404);
      assert.equal((await alice.ok('GET', '/room_keys/version')).version, v1);
      assert.equal((await alice.call('DELETE', '/room_keys/version/999')).status, 404);
      assert.equal((await alice.call('PUT', `/room_keys/version/${v2}`, { algorithm: ALGORITHM, auth_data: authData('x') })).status, 404);
      const v3 = await createVersion(alice);
      assert.ok(Number(v3) > Number(v2), `a deleted version's number is not given out again: ${v3}`);

      for (const body of [{ auth_data: authData('x') }, { algorithm: ALGORITHM }]) {
        assert.deepEqual((await alice.call('POST', '/room_keys/version', body)).body.errcode, 'M_MISSING_PARAM');
      }
      for (const body of [{ algorithm: 5, auth_data: {} }, { algorithm: ALGORITHM, auth_data: [] }]) {
        assert.deepEqual((await alice.call('POST', '/room_keys/version', body)).body.errcode, 'M_BAD_JSON');
      }
    });

    test('keys: stored through each route, read back at each level, counted, deleted', async () => {
      const alice = await user('alice');
      const version = await createVersion(alice);
      const base = (await alice.ok('GET', '/room_keys/version')).etag;

      const one = await alice.ok('PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, keyData(0, 0, false, 'a'));
      assert.equal(one.count, 1);
      assert.notEqual(one.etag, base, 'the etag moves when keys change');
      const room = await alice.ok('PUT', `/room_keys/keys/${enc(ROOM)}?version=${version}`, { sessions: { s2: keyData(3, 1, true, 'b') } });
      assert.equal(room.count, 2);
      const all = await alice.ok('PUT', `/room_keys/keys?version=${version}`, {
        rooms: { [OTHER_ROOM]: { sessions: { s3: keyData(1, 0, false, 'c'), s4: keyData(2, 0, false, 'd') } } },
      });
      assert.equal(all.count, 4);
      assert.equal(new Set([base, one.etag, room.etag, all.etag]).size, 4);

      assert.deepEqual(await alice.ok('GET', `/room_keys/keys?version=${version}`), {
        rooms: {
          [ROOM]: { sessions: { s1: keyData(0, 0, false, 'a'), s2: keyData(3, 1, true, 'b') } },
          [OTHER_ROOM]: { sessions: { s3: keyData(1, 0, false, 'c'), s4: keyData(2, 0, false, 'd') } },
        },
      });
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys/${enc(ROOM)}?version=${version}`), {
        sessions: { s1: keyData(0, 0, false, 'a'), s2: keyData(3, 1, true, 'b') },
      });
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys/${enc(ROOM)}/s2?version=${version}`), keyData(3, 1, true, 'b'));
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys/${enc('!empty:localhost')}?version=${version}`), { sessions: {} });
      const missing = await alice.call('GET', `/room_keys/keys/${enc(ROOM)}/nosuch?version=${version}`);
      assert.deepEqual([missing.status, missing.body.errcode], [404, 'M_NOT_FOUND']);
      const info = await alice.ok('GET', '/room_keys/version');
      assert.deepEqual([info.count, info.etag], [4, all.etag]);

      // Deleting: one session, a room, everything; each moves the etag.
      const d1 = await alice.ok('DELETE', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`);
      assert.equal(d1.count, 3);
      assert.notEqual(d1.etag, all.etag);
      const d2 = await alice.ok('DELETE', `/room_keys/keys/${enc(OTHER_ROOM)}?version=${version}`);
      assert.equal(d2.count, 1);
      assert.deepEqual(Object.keys((await alice.ok('GET', `/room_keys/keys?version=${version}`)).rooms), [ROOM]);
      const d3 = await alice.ok('DELETE', `/room_keys/keys?version=${version}`);
      assert.equal(d3.count, 0);
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys?version=${version}`), { rooms: {} });
      assert.equal(new Set([d1.etag, d2.etag, d3.etag]).size, 3);

      // Deleting a version takes its keys with it.
      await alice.ok('PUT', `/room_keys/keys/${enc(ROOM)}/s9?version=${version}`, keyData(0, 0, false, 'z'));
      await alice.ok('DELETE', `/room_keys/version/${version}`);
      const gone = await alice.call('GET', `/room_keys/keys?version=${version}`);
      assert.deepEqual([gone.status, gone.body.errcode], [404, 'M_NOT_FOUND']);
      const v2 = await createVersion(alice);
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys?version=${v2}`), { rooms: {} });

      // Another user's version is not found.
      const bob = await user('bob');
      assert.equal((await bob.call('GET', `/room_keys/keys?version=${v2}`)).status, 404);
      assert.equal((await bob.call('PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${v2}`, keyData(0, 0, false, 'x'))).status, 404);
    });

    test('keys are written only to the current version: 403 M_WRONG_ROOM_KEYS_VERSION names it', async () => {
      const alice = await user('alice');
      const none = await alice.call('PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=1`, keyData(0, 0, false, 'a'));
      assert.deepEqual([none.status, none.body.errcode], [404, 'M_NOT_FOUND']);
      const v1 = await createVersion(alice);
      await alice.ok('PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${v1}`, keyData(0, 0, false, 'a'));
      const v2 = await createVersion(alice);
      for (const path of [`/room_keys/keys/${enc(ROOM)}/s1`, `/room_keys/keys/${enc(ROOM)}`, '/room_keys/keys']) {
        const body = path.endsWith('s1') ? keyData(0, 0, true, 'b') : path.endsWith('keys') ? { rooms: {} } : { sessions: {} };
        const r = await alice.call('PUT', `${path}?version=${v1}`, body);
        assert.deepEqual([r.status, r.body.errcode, r.body.current_version], [403, 'M_WRONG_ROOM_KEYS_VERSION', v2], path);
      }
      const unknown = await alice.call('PUT', `/room_keys/keys?version=77`, { rooms: {} });
      assert.deepEqual([unknown.status, unknown.body.errcode], [404, 'M_NOT_FOUND']);
      // The old version is still readable, and its keys may still be deleted.
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys/${enc(ROOM)}/s1?version=${v1}`), keyData(0, 0, false, 'a'));
      assert.equal((await alice.ok('DELETE', `/room_keys/keys?version=${v1}`)).count, 0);
    });

    test('which copy of a session is kept: verified, then lower first_message_index, then lower forwarded_count', async () => {
      const alice = await user('alice');
      const version = await createVersion(alice);
      const path = `/room_keys/keys/${enc(ROOM)}/sess?version=${version}`;
      const stored = async () => alice.ok('GET', path);
      const put = async (data: object) => alice.ok('PUT', path, data);

      let r = await put(keyData(5, 2, false, 'first'));
      // Worse in every way: not replaced, etag unchanged.
      let again = await put(keyData(6, 3, false, 'worse'));
      assert.equal(again.etag, r.etag);
      assert.deepEqual(await stored(), keyData(5, 2, false, 'first'));
      // The same metadata: the stored copy stays.
      again = await put(keyData(5, 2, false, 'tie'));
      assert.equal(again.etag, r.etag);
      assert.deepEqual(await stored(), keyData(5, 2, false, 'first'));
      // A lower forwarded_count wins when the index is the same.
      r = await put(keyData(5, 1, false, 'fewer-forwards'));
      assert.notEqual(r.etag, again.etag);
      assert.deepEqual(await stored(), keyData(5, 1, false, 'fewer-forwards'));
      // A lower first_message_index wins, even with more forwards.
      await put(keyData(2, 9, false, 'earlier'));
      assert.deepEqual(await stored(), keyData(2, 9, false, 'earlier'));
      // A verified copy wins over an unverified one, even one starting later.
      await put(keyData(7, 9, true, 'verified'));
      assert.deepEqual(await stored(), keyData(7, 9, true, 'verified'));
      // And an unverified copy never replaces a verified one, however early it starts.
      await put(keyData(0, 0, false, 'unverified-earlier'));
      assert.deepEqual(await stored(), keyData(7, 9, true, 'verified'));
      // Among verified copies the index decides again.
      await put(keyData(1, 9, true, 'verified-earlier'));
      assert.deepEqual(await stored(), keyData(1, 9, true, 'verified-earlier'));
      assert.equal((await alice.ok('GET', '/room_keys/version')).count, 1);
    });

    test('bad input is a clear 4xx', async () => {
      const alice = await user('alice');
      const version = await createVersion(alice);
      const cases: [string, string, object | undefined, number, string][] = [
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1`, keyData(0, 0, false, 'a'), 400, 'M_MISSING_PARAM'],
        ['GET', '/room_keys/keys', undefined, 400, 'M_MISSING_PARAM'],
        ['DELETE', '/room_keys/keys', undefined, 400, 'M_MISSING_PARAM'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, { ...keyData(0, 0, false, 'a'), is_verified: 'yes' }, 400, 'M_INVALID_PARAM'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, { ...keyData(0, 0, false, 'a'), first_message_index: 1.5 }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, { ...keyData(0, 0, false, 'a'), forwarded_count: -1 }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, { ...keyData(0, 0, false, 'a'), session_data: 'opaque' }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, { first_message_index: 0, forwarded_count: 0, is_verified: false }, 400, 'M_MISSING_PARAM'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}?version=${version}`, {}, 400, 'M_MISSING_PARAM'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}?version=${version}`, { sessions: { s1: 5 } }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys?version=${version}`, {}, 400, 'M_MISSING_PARAM'],
        ['PUT', `/room_keys/keys?version=${version}`, { rooms: [] }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys?version=${version}`, { rooms: { [ROOM]: { sessions: 'x' } } }, 400, 'M_BAD_JSON'],
        ['PUT', `/room_keys/keys/${enc(ROOM)}/${'s'.repeat(300)}?version=${version}`, keyData(0, 0, false, 'a'), 400, 'M_INVALID_PARAM'],
        ['GET', `/room_keys/keys?version=${version}&version=${version}`, undefined, 400, 'M_INVALID_PARAM'],
        ['GET', '/room_keys/keys?version=nope', undefined, 404, 'M_NOT_FOUND'],
        ['DELETE', '/room_keys/keys?version=12345678901234567890', undefined, 404, 'M_NOT_FOUND'],
        ['GET', '/room_keys/version/0', undefined, 404, 'M_NOT_FOUND'],
      ];
      for (const [method, path, body, status, errcode] of cases) {
        const r = await alice.call(method, path, body);
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      }
      assert.deepEqual(await alice.ok('GET', `/room_keys/keys?version=${version}`), { rooms: {} }, 'nothing was stored');

      const anon = await new HttpClient(hs.baseUrl).get('/room_keys/version');
      assert.equal(anon.status, 401);
    });

    test('a deactivated account loses its backups', async () => {
      const alice = await user('alice');
      const version = await createVersion(alice);
      await alice.ok('PUT', `/room_keys/keys/${enc(ROOM)}/s1?version=${version}`, keyData(0, 0, false, 'a'));
      await alice.ok('POST', '/account/deactivate', { auth: { type: 'm.login.password', identifier: { type: 'm.id.user', user: alice.userId }, password: 'secret' } });
      const db = hs.server.core.db;
      assert.deepEqual(await db.selectFrom('backup_keys').select('session_id').where('user_id', '=', alice.userId).execute(), []);
      assert.deepEqual(await db.selectFrom('backup_versions').select('version').where('user_id', '=', alice.userId).execute(), []);
    });
  });
}
