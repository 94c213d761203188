// Cross-signing over real HTTP, on SQLite and PostgreSQL: POST /keys/device_signing/upload (the
// first upload and identical ones without user-interactive auth, replacements with the password),
// key validation, POST /keys/signatures/upload with every signature verified and failures per key,
// what /keys/query shows to whom, and device_lists in sync.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients } from '../sync/sync-client.js';
import { CrossSigning, Ed25519Key, crossSigningKey, deviceKeys, passwordAuth, type Signed } from './e2ee-keys.js';

const UPLOAD = '/keys/device_signing/upload';
const SIGNATURES = '/keys/signatures/upload';

/** A user with device keys uploaded for its device, and cross-signing keys made (not uploaded). */
async function withDevice(c: Client): Promise<{ c: Client; device: Ed25519Key; keys: Signed; cs: CrossSigning }> {
  const device = new Ed25519Key();
  const keys = deviceKeys(c.userId, c.user.deviceId, device);
  await c.ok('POST', '/keys/upload', { device_keys: keys });
  return { c, device, keys, cs: new CrossSigning(c.userId) };
}

function loginBody(userId: string, extra: object = {}): object {
  return { type: 'm.login.password', identifier: { type: 'm.id.user', user: userId }, password: 'secret', ...extra };
}

async function query(c: Client, ...users: string[]): Promise<any> {
  return c.ok('POST', '/keys/query', { device_keys: Object.fromEntries(users.map((u) => [u, []])) });
}

for (const { backend, skip } of await serverBackends()) {
  describe(`cross-signing on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('the first upload needs no password; the same keys again neither; other keys do', async () => {
      const { c: alice, cs } = await withDevice(await user('alice'));
      assert.deepEqual(await alice.ok('POST', UPLOAD, cs.upload()), {});
      assert.deepEqual(await alice.ok('POST', UPLOAD, cs.upload()), {}, 'identical keys again');
      assert.deepEqual(await alice.ok('POST', UPLOAD, { self_signing_key: cs.selfSigningKey }), {}, 'a subset, identical');

      const replacement = new CrossSigning(alice.userId);
      const first = await alice.call('POST', UPLOAD, replacement.upload());
      assert.equal(first.status, 401);
      assert.deepEqual(first.body.flows, [{ stages: ['m.login.password'] }]);
      assert.equal(typeof first.body.session, 'string');
      assert.equal(first.body.errcode, undefined, 'no stage was attempted yet');
      // Still the old keys.
      assert.deepEqual((await query(alice, alice.userId)).master_keys[alice.userId], cs.masterKey);

      const wrong = await alice.call('POST', UPLOAD, replacement.upload({ auth: passwordAuth(alice.userId, first.body.session, 'wrong') }));
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.errcode, 'M_FORBIDDEN');
      assert.deepEqual(wrong.body.completed, []);

      const done = await alice.call('POST', UPLOAD, replacement.upload({ auth: passwordAuth(alice.userId, first.body.session) }));
      assert.equal(done.status, 200, JSON.stringify(done.body));
      const q = await query(alice, alice.userId);
      assert.deepEqual(q.master_keys[alice.userId], replacement.masterKey);
      assert.deepEqual(q.self_signing_keys[alice.userId], replacement.selfSigningKey);
      assert.deepEqual(q.user_signing_keys[alice.userId], replacement.userSigningKey);

      // A new key where none was stored also needs the password once a master key exists.
      const { c: bob, cs: bobKeys } = await withDevice(await user('bob'));
      await bob.ok('POST', UPLOAD, { master_key: bobKeys.masterKey });
      const more = await bob.call('POST', UPLOAD, { self_signing_key: bobKeys.selfSigningKey });
      assert.equal(more.status, 401);
      const auth = passwordAuth(bob.userId, more.body.session);
      assert.deepEqual(await bob.ok('POST', UPLOAD, { self_signing_key: bobKeys.selfSigningKey, auth }), {});
      assert.deepEqual((await query(alice, bob.userId)).self_signing_keys[bob.userId], bobKeys.selfSigningKey);
    });

    test('keys are checked: owner, usage, one Ed25519 key, the master key’s signature', async () => {
      const { c: alice, cs } = await withDevice(await user('alice'));
      const other = new Ed25519Key();
      const badlySigned = other.sign(crossSigningKey(alice.userId, 'self_signing', cs.selfSigning), alice.userId, `ed25519:${cs.master.publicKey}`);
      const cases: [string, Signed, number, string][] = [
        ['no master key anywhere', { self_signing_key: cs.selfSigningKey }, 400, 'M_MISSING_PARAM'],
        ['master key of another user', { master_key: crossSigningKey('@someone:localhost', 'master', cs.master) }, 400, 'M_INVALID_PARAM'],
        ['wrong usage', { master_key: crossSigningKey(alice.userId, 'self_signing', cs.master) }, 400, 'M_INVALID_PARAM'],
        ['two keys', { master_key: { ...cs.masterKey, keys: { ...cs.masterKey['keys'], 'ed25519:x': 'x' } } }, 400, 'M_INVALID_PARAM'],
        ['key ID not the public key', { master_key: { ...cs.masterKey, keys: { 'ed25519:abc': cs.master.publicKey } } }, 400, 'M_INVALID_PARAM'],
        ['not an Ed25519 public key', { master_key: { ...cs.masterKey, keys: { 'ed25519:abc': 'abc' } } }, 400, 'M_INVALID_PARAM'],
        ['self-signing key signed by another key', { master_key: cs.masterKey, self_signing_key: badlySigned }, 400, 'M_INVALID_SIGNATURE'],
        ['user-signing key unsigned', { master_key: cs.masterKey, user_signing_key: crossSigningKey(alice.userId, 'user_signing', cs.userSigning) }, 400, 'M_INVALID_SIGNATURE'],
        ['usage not a list', { master_key: { ...cs.masterKey, usage: 'master' } }, 400, 'M_BAD_JSON'],
        ['keys not strings', { master_key: { ...cs.masterKey, keys: { [`ed25519:${cs.master.publicKey}`]: 1 } } }, 400, 'M_BAD_JSON'],
        ['signatures of the wrong shape', { master_key: { ...cs.masterKey, signatures: { [alice.userId]: 'x' } } }, 400, 'M_BAD_JSON'],
        ['user_id missing', { master_key: { usage: ['master'], keys: cs.masterKey['keys'] } }, 400, 'M_MISSING_PARAM'],
        ['a key that is not an object', { master_key: 'key' }, 400, 'M_BAD_JSON'],
        ['null', { master_key: null }, 400, 'M_BAD_JSON'],
      ];
      for (const [what, body, status, errcode] of cases) {
        const r = await alice.call('POST', UPLOAD, body);
        assert.deepEqual([r.status, r.body.errcode], [status, errcode], `${what}: ${JSON.stringify(r.body)}`);
      }
      assert.deepEqual((await query(alice, alice.userId)).master_keys, {}, 'nothing was stored');

      // A public key that is one of the user's device IDs would be ambiguous.
      const clash = new Ed25519Key();
      const login = await alice.ok('POST', '/login', loginBody(alice.userId, { device_id: clash.publicKey }));
      assert.equal(login.device_id, clash.publicKey);
      const r = await alice.call('POST', UPLOAD, { master_key: crossSigningKey(alice.userId, 'master', clash) });
      assert.deepEqual([r.status, r.body.errcode], [403, 'M_FORBIDDEN']);

      // Guests have no cross-signing; without a token nothing.
      const anon = await new HttpClient(hs.baseUrl).post(UPLOAD, {});
      assert.equal(anon.status, 401);
    });

    test('signatures: devices by the self-signing key, the master key by a device, another user by the user-signing key', async () => {
      const { c: alice, keys: aliceDevice, device: aliceDeviceKey, cs: aliceCs } = await withDevice(await user('alice'));
      const { c: bob, cs: bobCs } = await withDevice(await user('bob'));
      const carol = await user('carol');
      await alice.ok('POST', UPLOAD, aliceCs.upload());
      await bob.ok('POST', UPLOAD, bobCs.upload());
      const sskId = `ed25519:${aliceCs.selfSigning.publicKey}`;
      const deviceKeyId = `ed25519:${alice.user.deviceId}`;

      const signedDevice = aliceCs.selfSigning.sign(aliceDevice, alice.userId);
      const signedMaster = aliceDeviceKey.sign(aliceCs.masterKey, alice.userId, deviceKeyId);
      const signedBob = aliceCs.userSigning.sign(bobCs.masterKey, alice.userId);
      const up = await alice.ok('POST', SIGNATURES, {
        [alice.userId]: { [alice.user.deviceId]: signedDevice, [aliceCs.master.publicKey]: signedMaster },
        [bob.userId]: { [bobCs.master.publicKey]: signedBob },
      });
      assert.deepEqual(up, { failures: {} });

      // Everyone sees alice's own signatures; only alice sees what her user-signing key signed.
      for (const viewer of [alice, bob, carol]) {
        const q = await query(viewer, alice.userId, bob.userId);
        const device = q.device_keys[alice.userId][alice.user.deviceId];
        assert.equal(device.signatures[alice.userId][sskId], signedDevice['signatures'][alice.userId][sskId], viewer.userId);
        assert.equal(device.signatures[alice.userId][deviceKeyId], aliceDevice['signatures'][alice.userId][deviceKeyId]);
        assert.deepEqual(q.master_keys[alice.userId].signatures[alice.userId], { [deviceKeyId]: signedMaster['signatures'][alice.userId][deviceKeyId] });
        const bobMaster = q.master_keys[bob.userId];
        if (viewer === alice) assert.deepEqual(bobMaster, signedBob);
        else assert.deepEqual(bobMaster, bobCs.masterKey, `${viewer.userId} does not see alice's signature of bob`);
        // A user-signing key is shown to its owner only.
        assert.deepEqual(Object.keys(q.user_signing_keys), viewer === carol ? [] : [viewer.userId]);
        assert.deepEqual(q.self_signing_keys[alice.userId], aliceCs.selfSigningKey);
      }
      assert.deepEqual((await query(alice, bob.userId)).user_signing_keys, {}, 'only when the requester queried itself');

      // The same signatures again change nothing and fail nothing.
      assert.deepEqual(await alice.ok('POST', SIGNATURES, { [alice.userId]: { [alice.user.deviceId]: signedDevice } }), { failures: {} });
    });

    test('bad signatures are reported per key; good ones beside them are kept', async () => {
      const { c: alice, keys: aliceDevice, device: aliceDeviceKey, cs } = await withDevice(await user('alice'));
      const { c: bob, cs: bobCs } = await withDevice(await user('bob'));
      const dave = await user('dave');
      await alice.ok('POST', UPLOAD, cs.upload());
      await bob.ok('POST', UPLOAD, bobCs.upload());
      const second = await alice.ok('POST', '/login', loginBody(alice.userId));
      const secondDevice = new Ed25519Key();
      const secondKeys = deviceKeys(alice.userId, second.device_id, secondDevice);
      await new Client(hs, { userId: alice.userId, accessToken: second.access_token, deviceId: second.device_id }).ok('POST', '/keys/upload', { device_keys: secondKeys });
      const impostor = new Ed25519Key();

      const r = await alice.ok('POST', SIGNATURES, {
        [alice.userId]: {
          // Good: the second device signed by the self-signing key.
          [second.device_id]: cs.selfSigning.sign(secondKeys, alice.userId),
          // Signed by another key under the self-signing key's ID.
          [alice.user.deviceId]: impostor.sign(aliceDevice, alice.userId, `ed25519:${cs.selfSigning.publicKey}`),
          // A device that does not exist.
          NOSUCHDEVICE: cs.selfSigning.sign({ ...aliceDevice, device_id: 'NOSUCHDEVICE' }, alice.userId),
          // The master key signed by the device, but with its content changed.
          [cs.master.publicKey]: aliceDeviceKey.sign({ ...cs.masterKey, usage: ['master', 'other'] }, alice.userId, `ed25519:${alice.user.deviceId}`),
        },
        // Signed by the self-signing key, not the user-signing key.
        [bob.userId]: { [bobCs.master.publicKey]: cs.selfSigning.sign(bobCs.masterKey, alice.userId) },
        // No cross-signing keys at all; a key that is not the master key.
        [dave.userId]: { SOMEKEY: cs.userSigning.sign({ user_id: dave.userId }, alice.userId) },
      });
      assert.deepEqual(Object.keys(r.failures).sort(), [alice.userId, bob.userId, dave.userId].sort());
      assert.deepEqual(Object.keys(r.failures[alice.userId]).sort(), [alice.user.deviceId, 'NOSUCHDEVICE', cs.master.publicKey].sort());
      assert.equal(r.failures[alice.userId][alice.user.deviceId].errcode, 'M_INVALID_SIGNATURE');
      assert.equal(r.failures[alice.userId].NOSUCHDEVICE.errcode, 'M_NOT_FOUND');
      assert.equal(r.failures[alice.userId][cs.master.publicKey].errcode, 'M_INVALID_PARAM');
      assert.equal(r.failures[bob.userId][bobCs.master.publicKey].errcode, 'M_INVALID_SIGNATURE');
      assert.equal(r.failures[dave.userId].SOMEKEY.errcode, 'M_NOT_FOUND');
      for (const f of [r.failures[alice.userId][alice.user.deviceId], r.failures[bob.userId][bobCs.master.publicKey]]) {
        assert.equal(f.status, 400);
        assert.equal(typeof f.error, 'string');
      }

      const q = await query(bob, alice.userId);
      const sskId = `ed25519:${cs.selfSigning.publicKey}`;
      assert.ok(q.device_keys[alice.userId][second.device_id].signatures[alice.userId][sskId], 'the good signature was stored');
      assert.equal(q.device_keys[alice.userId][alice.user.deviceId].signatures[alice.userId][sskId], undefined, 'the bad one was not');
      assert.deepEqual(q.master_keys[alice.userId], cs.masterKey);

      // A deleted device takes the signatures on it along.
      const signaturesOn = (deviceId: string) =>
        hs.server.core.db.selectFrom('cross_signing_signatures').select('signature').where('target_user_id', '=', alice.userId).where('target_key_id', '=', deviceId).execute();
      assert.equal((await signaturesOn(second.device_id)).length, 1);
      await new Client(hs, { userId: alice.userId, accessToken: second.access_token, deviceId: second.device_id }).ok('POST', '/logout', {});
      assert.deepEqual(await signaturesOn(second.device_id), []);

      // Without cross-signing keys of its own, a user can sign nothing with them.
      const { c: erin, keys: erinDevice } = await withDevice(await user('erin'));
      const none = await erin.ok('POST', SIGNATURES, {
        [erin.userId]: { [erin.user.deviceId]: erinDevice },
        [alice.userId]: { [cs.master.publicKey]: cs.masterKey },
      });
      assert.equal(none.failures[erin.userId][erin.user.deviceId].errcode, 'M_NOT_FOUND');
      assert.equal(none.failures[alice.userId][cs.master.publicKey].errcode, 'M_NOT_FOUND');

      for (const body of [{ [alice.userId]: 'x' }, { [alice.userId]: { K: 5 } }]) {
        const bad = await alice.call('POST', SIGNATURES, body);
        assert.deepEqual([bad.status, bad.body.errcode], [400, 'M_BAD_JSON']);
      }
    });

    test('device_lists: room-mates hear of new cross-signing keys; user-signing signatures reach only the signer', async () => {
      const { c: alice, cs } = await withDevice(await user('alice'));
      const { c: bob, cs: bobCs } = await withDevice(await user('bob'));
      const carol = await user('carol');
      const outsider = await user('outsider');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await carol.join(roomId);
      await bob.ok('POST', UPLOAD, bobCs.upload());
      const since = new Map<Client, string>();
      for (const c of [alice, bob, carol, outsider]) since.set(c, (await c.sync()).next_batch);
      const changed = async (c: Client) => {
        const s = await c.sync({ since: since.get(c)!, timeout: 0 });
        since.set(c, s.next_batch);
        return [...s.device_lists.changed].sort();
      };

      await alice.ok('POST', UPLOAD, cs.upload());
      assert.deepEqual(await changed(bob), [alice.userId]);
      assert.deepEqual(await changed(carol), [alice.userId]);
      assert.deepEqual(await changed(alice), [alice.userId]);
      assert.deepEqual(await changed(outsider), []);

      // Alice signs bob's master key: alice's own devices hear of bob; nobody else hears of it.
      await alice.ok('POST', SIGNATURES, { [bob.userId]: { [bobCs.master.publicKey]: cs.userSigning.sign(bobCs.masterKey, alice.userId) } });
      assert.deepEqual(await changed(alice), [bob.userId]);
      assert.deepEqual(await changed(bob), []);
      assert.deepEqual(await changed(carol), []);
      assert.deepEqual(await changed(outsider), []);

      // Alice's self-signing key signs her device: everyone in the room hears of alice.
      const { unsigned: _u, ...served } = (await query(alice, alice.userId)).device_keys[alice.userId][alice.user.deviceId];
      await alice.ok('POST', SIGNATURES, { [alice.userId]: { [alice.user.deviceId]: cs.selfSigning.sign(served, alice.userId) } });
      assert.deepEqual(await changed(carol), [alice.userId]);
      assert.deepEqual(await changed(bob), [alice.userId]);

      // A new user-signing key alone concerns only its owner.
      const newUsk = new Ed25519Key();
      const uskBody = { user_signing_key: cs.master.sign(crossSigningKey(alice.userId, 'user_signing', newUsk), alice.userId) };
      const challenge = await alice.call('POST', UPLOAD, uskBody);
      await alice.ok('POST', UPLOAD, { ...uskBody, auth: passwordAuth(alice.userId, challenge.body.session) });
      assert.deepEqual(await changed(alice), [alice.userId]);
      assert.deepEqual(await changed(carol), []);
      // Its signatures went with the old user-signing key.
      assert.deepEqual((await query(alice, bob.userId)).master_keys[bob.userId], bobCs.masterKey);
    });
  });
}
