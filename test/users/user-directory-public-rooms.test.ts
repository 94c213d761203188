// The user directory's "public rooms" are rooms anyone may join or read (join rule public, or
// history world_readable), published in the room directory or not; over HTTP on both backends.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, enc } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`user directory and public rooms on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let stranger: Client;
    const found = async (term: string): Promise<string[]> =>
      (await stranger.ok('POST', '/user_directory/search', { search_term: term, limit: 50 })).results.map((r: any) => r.user_id);

    before(async () => {
      stranger = new Client(hs, await hs.registerUser('stranger', 'secret'));
    });

    test('a member of an unpublished public_chat room is found by a stranger', async () => {
      const owner = new Client(hs, await hs.registerUser('openowner', 'secret'));
      const member = new Client(hs, await hs.registerUser('openmember', 'secret'));
      const roomId = await owner.createRoom({ preset: 'public_chat' });
      assert.equal((await owner.ok('GET', `/directory/list/room/${enc(roomId)}`)).visibility, 'private');
      await member.join(roomId);
      assert.deepEqual((await found('openmember')).sort(), [member.userId]);
      assert.deepEqual(await found('openowner'), [owner.userId]);
    });

    test('a member of a world-readable invite-only room is found', async () => {
      const owner = new Client(hs, await hs.registerUser('readableowner', 'secret'));
      await owner.createRoom({
        preset: 'private_chat',
        initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }],
      });
      assert.deepEqual(await found('readableowner'), [owner.userId]);
    });

    test('a user only in private rooms is not found, even in a published one', async () => {
      const owner = new Client(hs, await hs.registerUser('hiddenowner', 'secret'));
      const member = new Client(hs, await hs.registerUser('hiddenmember', 'secret'));
      const roomId = await owner.createRoom({ preset: 'private_chat', visibility: 'public' });
      assert.equal((await owner.ok('GET', `/directory/list/room/${enc(roomId)}`)).visibility, 'public');
      await owner.invite(roomId, member.userId);
      await member.join(roomId);
      assert.deepEqual(await found('hidden'), []);
      // They find each other: they share the room.
      assert.deepEqual(await new Client(hs, member.user).ok('POST', '/user_directory/search', { search_term: 'hiddenowner' }).then((b) => b.results.map((r: any) => r.user_id)), [owner.userId]);
    });
  });
}
