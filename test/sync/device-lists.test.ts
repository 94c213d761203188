// device_lists in /sync over real HTTP, on SQLite and PostgreSQL: who appears under `changed`
// (device or key changes of users sharing a room, the user's own devices, users newly sharing a
// room) and under `left` (users no longer sharing any room), and that such changes wake a waiting
// sync.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients } from './sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`device lists in sync on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const login = async (c: Client) => {
      const r = await c.ok('POST', '/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: c.userId }, password: 'secret' });
      return new Client(hs, { userId: c.userId, accessToken: r.access_token, deviceId: r.device_id });
    };
    /** What an incremental sync from `since` reports under device_lists, and its next token. */
    const lists = async (c: Client, since: string) => {
      const s = await c.sync({ since });
      return { changed: [...s.device_lists.changed].sort(), left: [...s.device_lists.left].sort(), next: s.next_batch as string };
    };

    test('device changes of users sharing a room, and of the user, are listed; others are not', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const initial = await alice.sync();
      assert.deepEqual(initial.device_lists, { changed: [], left: [] }, 'initial syncs list nothing');

      // A new device (login) of bob's; carol shares no room with alice.
      const bob2 = await login(bob);
      await login(carol);
      let r = await lists(alice, initial.next_batch);
      assert.deepEqual(r, { changed: [bob.userId], left: [], next: r.next });
      assert.deepEqual((await lists(alice, r.next)).changed, [], 'reported once');

      // Keys uploaded, a device renamed, a device deleted: each a change.
      let since = r.next;
      await bob2.ok('POST', '/keys/upload', {
        device_keys: { user_id: bob.userId, device_id: bob2.user.deviceId, algorithms: [], keys: {}, signatures: {} },
      });
      r = await lists(alice, since);
      assert.deepEqual(r.changed, [bob.userId], 'keys uploaded');
      // Uploading the same keys again changes nothing.
      since = r.next;
      await bob2.ok('POST', '/keys/upload', {
        device_keys: { user_id: bob.userId, device_id: bob2.user.deviceId, algorithms: [], keys: {}, signatures: {} },
      });
      await bob2.ok('POST', '/keys/upload', { one_time_keys: { 'signed_curve25519:A': 'k' } });
      r = await lists(alice, since);
      assert.deepEqual(r.changed, [], 'the same keys again, and one-time keys, are no device list change');
      await bob.ok('PUT', `/devices/${bob2.user.deviceId}`, { display_name: 'Tablet' });
      r = await lists(alice, r.next);
      assert.deepEqual(r.changed, [bob.userId], 'renamed');
      await bob2.ok('POST', '/logout', {});
      r = await lists(alice, r.next);
      assert.deepEqual(r.changed, [bob.userId], 'deleted');

      // Alice's own new device shows in her own sync.
      await login(alice);
      r = await lists(alice, r.next);
      assert.deepEqual(r.changed, [alice.userId]);
    });

    test('users newly sharing a room are listed as changed; users no longer sharing any as left', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const dave = await user('dave');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      let since = (await alice.sync()).next_batch;

      // Bob joins alice's room.
      await bob.join(roomId);
      let r = await lists(alice, since);
      assert.deepEqual([r.changed, r.left], [[bob.userId], []]);
      // Alice joins dave's room: dave (and no one else new) is listed.
      const daveRoom = await dave.createRoom({ preset: 'public_chat' });
      await alice.join(daveRoom);
      r = await lists(alice, r.next);
      assert.deepEqual([r.changed, r.left], [[dave.userId], []]);

      // Bob shares a second room with alice: leaving one keeps him shared.
      const second = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(second);
      since = (await lists(alice, r.next)).next;
      await bob.leave(roomId);
      r = await lists(alice, since);
      assert.deepEqual([r.changed, r.left], [[], []], 'still shares a room');
      await bob.leave(second);
      r = await lists(alice, r.next);
      assert.deepEqual([r.changed, r.left], [[], [bob.userId]]);
      // Bob's later device changes no longer concern alice.
      await login(bob);
      r = await lists(alice, r.next);
      assert.deepEqual(r.changed, []);

      // Alice leaves dave's room: dave is left; bob hears nothing of it.
      const bobSince = (await bob.sync()).next_batch;
      await alice.leave(daveRoom);
      r = await lists(alice, r.next);
      assert.deepEqual([r.changed, r.left], [[], [dave.userId]]);
      assert.deepEqual((await lists(bob, bobSince)).left, []);
    });

    test('a kicked or banned member, and a deactivated account, are left', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await carol.join(roomId);
      let since = (await alice.sync()).next_batch;
      await alice.ok('POST', `/rooms/${encodeURIComponent(roomId)}/ban`, { user_id: bob.userId });
      let r = await lists(alice, since);
      assert.deepEqual(r.left, [bob.userId]);
      since = r.next;
      await carol.ok('POST', '/account/deactivate', { auth: { type: 'm.login.password', identifier: { type: 'm.id.user', user: carol.userId }, password: 'secret' } });
      r = await lists(alice, since);
      assert.deepEqual(r.left, [carol.userId]);
    });

    test('a device change wakes the long-poll of a user sharing a room', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const since = (await alice.sync()).next_batch;
      const started = Date.now();
      const waiting = alice.sync({ since, timeout: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await bob.ok('POST', '/keys/upload', {
        device_keys: { user_id: bob.userId, device_id: bob.user.deviceId, algorithms: [], keys: {}, signatures: {} },
      });
      const s = await waiting;
      assert.ok(Date.now() - started < 5000, 'woken, not timed out');
      assert.deepEqual(s.device_lists.changed, [bob.userId]);
    });

    test('a token whose device_lists position is behind still works (older tokens start at 0)', async () => {
      const alice = await user('alice');
      const s = await alice.sync();
      const parts = (s.next_batch as string).slice(1).split('_');
      parts[6] = '0';
      const old = 's' + parts.join('_');
      const r = await alice.sync({ since: old });
      assert.ok(r.device_lists.changed.includes(alice.userId), 'alice logged in after position 0');
      const bad = await alice.syncRaw({ since: 's1_2_3' });
      assert.equal(bad.status, 400);
    });
  });
}
