// GET /_chat/client/v1/room_summary/{roomIdOrAlias} and the unstable im.nheko.summary paths, over
// HTTP on SQLite and PostgreSQL: the summary's fields, and who may see which room (public,
// world-readable, members and invitees, restricted rooms through the rooms they allow).

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`room summaries on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const summaryPath = (room: string) => `/_chat/client/v1/room_summary/${enc(room)}`;
    const summary = (who: Client | undefined, room: string, path = summaryPath(room)) =>
      request(hs.baseUrl, 'GET', path, undefined, who === undefined ? {} : { token: who.user.accessToken });

    let alice: Client;
    let bob: Client;
    let publicRoom: string;
    let alias: string;
    let space: string;
    let privateRoom: string;
    let restricted: string;
    let readable: string;
    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      alias = `#summary-${backend}:localhost`;
      publicRoom = await alice.createRoom({
        preset: 'public_chat',
        room_alias_name: `summary-${backend}`,
        name: 'Cheese',
        topic: 'Tasty cheese',
        initial_state: [
          { type: 'm.room.avatar', state_key: '', content: { url: 'mxc://localhost/cheddar' } },
          { type: 'm.room.encryption', state_key: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } },
        ],
      });
      space = await alice.createRoom({ preset: 'private_chat', name: 'Space', creation_content: { type: 'm.space' } });
      privateRoom = await alice.createRoom({ preset: 'private_chat', name: 'Secret' });
      restricted = await alice.createRoom({
        room_version: '9',
        name: 'Members of the space',
        initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: space }] } }],
      });
      readable = await alice.createRoom({
        preset: 'private_chat',
        initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }],
      });
    });

    test('a public room by id and by alias: its fields, and the asking user not in it', async () => {
      const carol = await user('carol');
      await carol.join(publicRoom);
      for (const target of [publicRoom, alias]) {
        const r = await summary(bob, target);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body, {
          room_id: publicRoom,
          name: 'Cheese',
          topic: 'Tasty cheese',
          avatar_url: 'mxc://localhost/cheddar',
          canonical_alias: alias,
          num_joined_members: 2,
          join_rule: 'public',
          world_readable: false,
          guest_can_join: false,
          encryption: 'm.megolm.v1.aes-sha2',
          room_version: '10',
          membership: 'leave',
        });
      }
      const mine = await summary(alice, publicRoom);
      assert.equal(mine.body.membership, 'join');
    });

    test('without a token: public and world-readable rooms only, with no membership', async () => {
      const open = await summary(undefined, publicRoom);
      assert.equal(open.status, 200);
      assert.equal(open.body.membership, undefined);
      const world = await summary(undefined, readable);
      assert.deepEqual([world.status, world.body.world_readable, world.body.join_rule], [200, true, 'invite']);
      const closed = await summary(undefined, privateRoom);
      assert.deepEqual([closed.status, closed.body.errcode], [404, 'M_NOT_FOUND']);
    });

    test('a private room: members and invitees only', async () => {
      assert.deepEqual([(await summary(bob, privateRoom)).status, (await summary(bob, privateRoom)).body.errcode], [404, 'M_NOT_FOUND']);
      const own = await summary(alice, privateRoom);
      assert.deepEqual([own.status, own.body.membership, own.body.name], [200, 'join', 'Secret']);
      await alice.invite(privateRoom, bob.userId);
      const invited = await summary(bob, privateRoom);
      assert.deepEqual([invited.status, invited.body.membership], [200, 'invite']);
    });

    test('a restricted room: seen by members of a room it allows, with the allowed rooms; a space has its type', async () => {
      const dave = await user('dave');
      const refused = await summary(dave, restricted);
      assert.deepEqual([refused.status, refused.body.errcode], [404, 'M_NOT_FOUND']);
      await alice.invite(space, dave.userId);
      await dave.join(space);
      const allowed = await summary(dave, restricted);
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      assert.deepEqual([allowed.body.join_rule, allowed.body.allowed_room_ids, allowed.body.membership, allowed.body.room_version], ['restricted', [space], 'leave', '9']);
      const spaceSummary = await summary(dave, space);
      assert.deepEqual([spaceSummary.body.room_type, spaceSummary.body.membership], ['m.space', 'join']);
    });

    test('unknown rooms and aliases are 404; something that is neither is 400', async () => {
      assert.equal((await summary(bob, '!nowhere:localhost')).status, 404);
      assert.equal((await summary(bob, '#nowhere:localhost')).status, 404);
      const bad = await summary(bob, 'nothing');
      assert.deepEqual([bad.status, bad.body.errcode], [400, 'M_INVALID_PARAM']);
    });

    test('the unstable paths answer the same, with the unstable field names too', async () => {
      const stable = (await summary(bob, publicRoom)).body;
      for (const path of [`/_matrix/client/unstable/im.nheko.summary/summary/${enc(alias)}`, `/_matrix/client/unstable/im.nheko.summary/rooms/${enc(publicRoom)}/summary`]) {
        const r = await summary(bob, publicRoom, path);
        assert.equal(r.status, 200, path);
        assert.deepEqual(r.body, { ...stable, 'im.nheko.summary.room_version': '10', 'im.nheko.summary.encryption': 'm.megolm.v1.aes-sha2' });
      }
      const versions = await request(hs.baseUrl, 'GET', '/_matrix/client/versions');
      assert.equal(versions.body.unstable_features['im.nheko.summary'], true);
    });
  });
}
