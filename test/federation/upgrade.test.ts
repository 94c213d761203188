// A room upgrade with a member on another server: alice on hs1 upgrades a room bob on hs2 is in;
// hs2 receives the tombstone and the restricted power levels, bob follows the tombstone into the
// new room through hs1 (its alias moved with it) and his tags there follow him.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/protocol/json.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

const ARRIVES_MS = 15_000;

for (const { backend, skip } of await serverBackends()) {
  describe(`a room upgrade across servers on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;
    let bob: TestUser;

    before(async () => {
      net = await startFederationNet();
      const federation = { senderRetry: { minMs: 100, maxMs: 1000 } };
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    const call = (hs: TestServer, user: TestUser, method: string, path: string, body?: JsonObject) =>
      request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: user.accessToken });

    test('the remote member sees the tombstone and follows it into the new room', async () => {
      const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat', room_alias_name: 'town', name: 'Town square', room_version: '9' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const oldRoom = created.body!['room_id'] as string;
      const joined = await call(hs2, bob, 'POST', `/join/${enc('#town:hs1.test')}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      const tagged = await call(hs2, bob, 'PUT', `/user/${enc(bob.userId)}/rooms/${enc(oldRoom)}/tags/m.favourite`, { order: 0.1 });
      assert.equal(tagged.status, 200);

      const upgraded = await call(hs1, alice, 'POST', `/rooms/${enc(oldRoom)}/upgrade`, { new_version: '11' });
      assert.equal(upgraded.status, 200, JSON.stringify(upgraded.body));
      const newRoom = upgraded.body!['replacement_room'] as string;

      // hs2 has the tombstone, and the old room's restricted power levels.
      await eventually(async () => (await call(hs2, bob, 'GET', `/rooms/${enc(oldRoom)}/state/m.room.tombstone`)).status === 200, 'the tombstone on hs2', ARRIVES_MS);
      const tombstone = await call(hs2, bob, 'GET', `/rooms/${enc(oldRoom)}/state/m.room.tombstone`);
      assert.equal(tombstone.body!['replacement_room'], newRoom);
      await eventually(async () => (await call(hs2, bob, 'GET', `/rooms/${enc(oldRoom)}/state/m.room.power_levels`)).body!['events_default'] === 50, 'the restricted power levels on hs2', ARRIVES_MS);
      const refused = await call(hs2, bob, 'PUT', `/rooms/${enc(oldRoom)}/send/m.room.message/late`, { msgtype: 'm.text', body: 'too late' });
      assert.equal(refused.status, 403);

      // The alias names the new room; bob joins it through hs1 and keeps his tag.
      const alias = await call(hs2, bob, 'GET', `/directory/room/${enc('#town:hs1.test')}`);
      assert.equal(alias.body!['room_id'], newRoom);
      const follow = await call(hs2, bob, 'POST', `/join/${enc(newRoom)}?via=hs1.test`, {});
      assert.equal(follow.status, 200, JSON.stringify(follow.body));
      const name = await call(hs2, bob, 'GET', `/rooms/${enc(newRoom)}/state/m.room.name`);
      assert.deepEqual(name.body, { name: 'Town square' });
      const create = await call(hs2, bob, 'GET', `/rooms/${enc(newRoom)}/state/m.room.create`);
      assert.deepEqual([create.body!['room_version'], (create.body!['predecessor'] as JsonObject)['room_id']], ['11', oldRoom]);
      const tags = await call(hs2, bob, 'GET', `/user/${enc(bob.userId)}/rooms/${enc(newRoom)}/tags`);
      assert.deepEqual(tags.body!['tags'], { 'm.favourite': { order: 0.1 } });
    });
  });
}
