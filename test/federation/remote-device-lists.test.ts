// The copy hs1 keeps of another server's user's device list, between real servers over TLS:
// hs1.test (127.0.0.2, naming `chat`) and hs2.test (127.0.0.3, naming `matrix`, restartable).
// Alice on hs1 and Bob on hs2 share a room. Alice's first /keys/query about Bob is asked of hs2 and
// hs1 fetches Bob's list (/user/devices); later ones are answered from the copy, kept current by
// hs2's m.device_list_update EDUs (a new device, a deleted one). An update that follows a change
// hs1 never saw makes hs1 fetch the list again. With hs2 stopped, a current copy answers, and so
// does a stale one instead of a failure. A copy made before Bob stopped sharing a room with hs1
// and shared one again is not used; once he leaves the only shared room, the copy is dropped.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FederationClient, FederationRequest } from '../../src/federation/client.js';
import { CrossSigning, Ed25519Key, deviceKeys } from '../client/e2ee-keys.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type RestartableServer, restartableFederatedServer } from '../support/restartable-server.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

const PREFIX = '/_chat/client/v3';
/** Waits for what crosses between servers: a few transactions on loopback, with room for a slow machine. */
const CROSSING_MS = 15_000;
const RETRY = { minMs: 100, maxMs: 500 };

/** Counts the requests hs1 makes of other servers, by path (its federation client, wrapped). */
function countRequests(hs: TestServer): { readonly count: (prefix: string) => number } {
  const client = hs.server.services.federation! as FederationClient & { request: FederationClient['request'] };
  const original = client.request;
  const paths: string[] = [];
  client.request = (req: FederationRequest) => {
    paths.push(req.path);
    return original.call(client, req);
  };
  return { count: (prefix) => paths.filter((p) => p.startsWith(prefix)).length };
}

const USER_DEVICES = '/federation/v1/user/devices/';
const KEYS_QUERY = '/federation/v1/user/keys/query';

for (const { backend, skip } of await serverBackends()) {
  describe(`the copy of another server's user's device list on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: RestartableServer;
    let alice: TestUser;
    let bob: TestUser;
    let roomId: string;
    let requests: ReturnType<typeof countRequests>;
    const bobCs = { keys: undefined as CrossSigning | undefined };

    const call = (hs: TestServer, user: TestUser, method: string, path: string, body?: unknown) =>
      request(hs.baseUrl, method, `${PREFIX}${path}`, body, { token: user.accessToken });
    const ok = async (hs: TestServer, user: TestUser, method: string, path: string, body?: unknown) => {
      const res = await call(hs, user, method, path, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body as any;
    };
    /** Alice's /keys/query about these users (all their devices). */
    const query = (...users: string[]) => ok(hs1, alice, 'POST', '/keys/query', { device_keys: Object.fromEntries(users.map((u) => [u, []])), timeout: 3000 });
    const kept = () => hs1.server.core.db.selectFrom('remote_device_lists').selectAll().where('user_id', '=', bob.userId).executeTakeFirst();
    const keptIsCurrent = async () => (await kept())?.stale === 0;

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation: { senderRetry: RETRY } });
      hs2 = await restartableFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation: { senderRetry: RETRY } });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      await ok(hs2, bob, 'POST', '/keys/upload', { device_keys: deviceKeys(bob.userId, bob.deviceId, new Ed25519Key()) });
      bobCs.keys = new CrossSigning(bob.userId);
      await ok(hs2, bob, 'POST', '/keys/device_signing/upload', bobCs.keys.upload());
      roomId = (await ok(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat', room_version: '10' })).room_id as string;
      await ok(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      requests = countRequests(hs1);
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    test("alice's first query about bob is asked of hs2 and fetches his list; the next is answered from the copy, alike", async () => {
      const first = await query(bob.userId);
      assert.deepEqual(first.failures, {});
      assert.ok(first.device_keys[bob.userId][bob.deviceId], JSON.stringify(first));
      assert.deepEqual(first.master_keys[bob.userId], bobCs.keys!.masterKey);
      assert.equal(requests.count(KEYS_QUERY), 1);
      await eventually(keptIsCurrent, "hs1 keeps bob's list", CROSSING_MS);
      assert.equal(requests.count(USER_DEVICES), 1);

      const second = await query(bob.userId);
      assert.deepEqual(second, first);
      assert.equal(requests.count(KEYS_QUERY), 1, 'hs2 was not asked again');
      assert.equal(requests.count(USER_DEVICES), 1);
    });

    test("bob's new device reaches hs1 by EDU and shows in alice's answer; once deleted, it is gone", async () => {
      const login = await request(hs2.baseUrl, 'POST', `${PREFIX}/login`, {
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: 'bob' },
        password: 'bob-password',
        initial_device_display_name: 'laptop',
      });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      const laptop: TestUser = { userId: bob.userId, accessToken: login.body!['access_token'] as string, deviceId: login.body!['device_id'] as string };
      const laptopKeys = deviceKeys(bob.userId, laptop.deviceId, new Ed25519Key());
      await ok(hs2, laptop, 'POST', '/keys/upload', { device_keys: laptopKeys });

      let shown: any;
      await eventually(async () => ((shown = (await query(bob.userId)).device_keys[bob.userId]), shown[laptop.deviceId] !== undefined), 'the laptop shows on hs1', CROSSING_MS);
      const { unsigned, ...keys } = shown[laptop.deviceId];
      assert.deepEqual(keys, laptopKeys);
      assert.deepEqual(unsigned, { device_display_name: 'laptop' });
      assert.deepEqual(Object.keys(shown).sort(), [bob.deviceId, laptop.deviceId].sort());
      // Applied from the EDUs: hs2 was neither asked nor the list fetched again.
      assert.equal(requests.count(KEYS_QUERY), 1);
      assert.equal(requests.count(USER_DEVICES), 1);

      await ok(hs2, laptop, 'POST', '/logout', {});
      await eventually(async () => (await query(bob.userId)).device_keys[bob.userId][laptop.deviceId] === undefined, 'the laptop is gone on hs1', CROSSING_MS);
      assert.deepEqual(Object.keys((await query(bob.userId)).device_keys[bob.userId]), [bob.deviceId]);
      assert.equal(requests.count(KEYS_QUERY), 1);
      assert.equal(requests.count(USER_DEVICES), 1);
    });

    test('an update following a change hs1 never saw makes it fetch the list again, not apply the update', async () => {
      const before = await query(bob.userId);
      const streamId = Number((await kept())!.stream_id);
      const forged = deviceKeys(bob.userId, bob.deviceId, new Ed25519Key());
      const res = await hs2.server.services.federation!.request({
        destination: 'hs1.test',
        method: 'PUT',
        path: '/federation/v1/send/gap-1',
        body: {
          origin: 'hs2.test',
          origin_server_ts: Date.now(),
          pdus: [],
          edus: [{ edu_type: 'm.device_list_update', content: { user_id: bob.userId, device_id: bob.deviceId, stream_id: streamId + 1000, prev_id: [streamId + 999], keys: forged, device_display_name: 'forged' } }],
        },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await eventually(async () => requests.count(USER_DEVICES) === 2 && (await keptIsCurrent()), 'hs1 fetches the list again', CROSSING_MS);
      // hs2's own list, at hs2's own position.
      assert.ok(Number((await kept())!.stream_id) < streamId + 1000);
      const after = await query(bob.userId);
      assert.deepEqual(after, before);
      assert.equal(requests.count(KEYS_QUERY), 1);
    });

    describe('with hs2 stopped', () => {
      before(async () => {
        await hs2.stop();
      });
      after(async () => {
        if (!hs2.running) await hs2.start();
      });

      test("a current copy answers alice's query, and a stale one does instead of a failure", async () => {
        const current = await query(bob.userId);
        assert.deepEqual(current.failures, {});
        assert.deepEqual(Object.keys(current.device_keys[bob.userId]), [bob.deviceId]);
        assert.equal(requests.count(KEYS_QUERY), 1);

        // As if an update had been missed: hs2 is asked, cannot answer, and the stale copy does.
        await hs1.server.core.db.updateTable('remote_device_lists').set({ stale: 1 }).where('user_id', '=', bob.userId).execute();
        const stale = await query(bob.userId);
        assert.equal(requests.count(KEYS_QUERY), 2);
        assert.deepEqual(stale, current);
        // A user of hs2 with no copy: hs2 stays a failure, and bob is still answered.
        const mixed = await query(bob.userId, '@nobody:hs2.test');
        assert.deepEqual(Object.keys(mixed.failures), ['hs2.test']);
        assert.deepEqual(mixed.device_keys[bob.userId], current.device_keys[bob.userId]);
        // The fetches tried meanwhile failed: the copy stays stale.
        assert.equal((await kept())?.stale, 1);
      });

      test('once hs2 is back, the next query fetches the list again', async () => {
        await hs2.start();
        const fetched = requests.count(USER_DEVICES);
        const answer = await query(bob.userId);
        assert.deepEqual(answer.failures, {});
        await eventually(async () => requests.count(USER_DEVICES) > fetched && (await keptIsCurrent()), 'the copy is current again', CROSSING_MS);
      });
    });

    /** Bob's membership of the shared room as hs1 has it. */
    const membership = () =>
      hs1.server.core.db
        .selectFrom('room_memberships')
        .select('membership')
        .where('user_id', '=', bob.userId)
        .executeTakeFirst()
        .then((r) => r?.membership);

    test('a device bob added while sharing no room with hs1 shows once he joins again', async () => {
      await ok(hs2, bob, 'POST', `/rooms/${enc(roomId)}/leave`, {});
      await eventually(async () => (await membership()) === 'leave', "bob's leave reaches hs1", CROSSING_MS);
      // hs2 tells hs1 nothing of this device: they share no room.
      const login = await request(hs2.baseUrl, 'POST', `${PREFIX}/login`, { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'bob' }, password: 'bob-password' });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      const tablet: TestUser = { userId: bob.userId, accessToken: login.body!['access_token'] as string, deviceId: login.body!['device_id'] as string };
      await ok(hs2, tablet, 'POST', '/keys/upload', { device_keys: deviceKeys(bob.userId, tablet.deviceId, new Ed25519Key()) });
      await ok(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      await eventually(async () => (await membership()) === 'join', "bob's join reaches hs1", CROSSING_MS);

      const asked = requests.count(KEYS_QUERY);
      const answer = await query(bob.userId);
      assert.deepEqual(Object.keys(answer.device_keys[bob.userId]).sort(), [bob.deviceId, tablet.deviceId].sort());
      assert.equal(requests.count(KEYS_QUERY), asked + 1, 'the copy from before the break was not used');
      await eventually(keptIsCurrent, 'hs1 fetches the list again', CROSSING_MS);
      assert.deepEqual(await query(bob.userId), answer);
      assert.equal(requests.count(KEYS_QUERY), asked + 1);
    });

    test('once bob leaves the only room shared with hs1, his copy is not used and is dropped', async () => {
      await ok(hs2, bob, 'POST', `/rooms/${enc(roomId)}/leave`, {});
      await eventually(async () => (await membership()) === 'leave', "bob's leave reaches hs1", CROSSING_MS);
      const asked = requests.count(KEYS_QUERY);
      const fetched = requests.count(USER_DEVICES);
      const answer = await query(bob.userId);
      assert.deepEqual(answer.failures, {});
      assert.ok(answer.device_keys[bob.userId][bob.deviceId]);
      assert.equal(requests.count(KEYS_QUERY), asked + 1, 'hs2 was asked');
      assert.equal(await kept(), undefined);
      // Not fetched for keeping either.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(requests.count(USER_DEVICES), fetched);
    });
  });
}
