// Room version 12 over the client API, on SQLite and PostgreSQL: the room id is the create event's
// id, the create event has no room_id in its federation form, creators have infinite power and
// are never listed in power levels, trusted private chats make their invitees creators, and the
// room works as any other (joins, messages, kicks, bans, state, sync, upgrades into it).

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const HASHED_ROOM_ID = /^![A-Za-z0-9_-]{43}$/;

for (const { backend, skip } of await serverBackends()) {
  describe(`room version 12 on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const state = (who: Client, roomId: string, type: string, key = '') => who.ok('GET', `/rooms/${enc(roomId)}/state/${enc(type)}/${enc(key)}`);

    let alice: Client;
    let bob: Client;
    let carol: Client;
    let roomId: string;
    before(async () => {
      alice = await user('alice');
      bob = await user('bob');
      carol = await user('carol');
      roomId = await alice.createRoom({ room_version: '12', preset: 'public_chat', name: 'Hydra' });
    });

    test('/capabilities lists 12 as stable', async () => {
      const caps = await alice.ok('GET', '/capabilities');
      assert.equal(caps.capabilities['m.room_versions'].available['12'], 'stable');
    });

    test("the room id is the create event's id; the creator is not listed in power levels", async () => {
      assert.match(roomId, HASHED_ROOM_ID);
      const all = await alice.ok('GET', `/rooms/${enc(roomId)}/state`);
      const create = all.find((e: any) => e.type === 'm.room.create');
      assert.equal(create.event_id, '$' + roomId.slice(1));
      assert.equal(create.room_id, roomId);
      assert.equal(create.content.room_version, '12');
      assert.equal(create.content.creator, undefined);
      const levels = await state(alice, roomId, 'm.room.power_levels');
      assert.deepEqual(levels.users, {});
      assert.equal(levels.events['m.room.tombstone'], 150);
      assert.equal((await state(alice, roomId, 'm.room.name')).name, 'Hydra');
    });

    test('others join and talk; the creator outranks any level', async () => {
      await bob.join(roomId);
      await carol.join(roomId);
      const sent = await bob.text(roomId, 'hello hydra');
      const messages = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`);
      assert.ok(messages.chunk.some((e: any) => e.event_id === sent && e.room_id === roomId));
      // Bob made admin at 100: he still cannot kick or demote the creator, nor list her.
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.power_levels/`, { ...(await state(alice, roomId, 'm.room.power_levels')), users: { [bob.userId]: 100 } });
      const kick = await bob.call('POST', `/rooms/${enc(roomId)}/kick`, { user_id: alice.userId });
      assert.equal(kick.status, 403);
      const listCreator = await bob.call('PUT', `/rooms/${enc(roomId)}/state/m.room.power_levels/`, {
        ...(await state(alice, roomId, 'm.room.power_levels')),
        users: { [bob.userId]: 100, [alice.userId]: 1 },
      });
      assert.equal(listCreator.status, 403);
      // The creator can do anything a level allows, and ban an admin.
      await alice.ok('POST', `/rooms/${enc(roomId)}/ban`, { user_id: carol.userId });
      assert.equal((await state(alice, roomId, 'm.room.member', carol.userId)).membership, 'ban');
      const rejoin = await carol.call('POST', `/join/${enc(roomId)}`, {});
      assert.equal(rejoin.status, 403);
    });

    test("the creator's @room notifies though she is not listed in power levels", async () => {
      const before = (await bob.sync({ timeout: 0 })).rooms.join[roomId].unread_notifications.highlight_count ?? 0;
      await alice.send(roomId, { msgtype: 'm.text', body: 'everyone!', 'm.mentions': { room: true } });
      const after = (await bob.sync({ timeout: 0 })).rooms.join[roomId].unread_notifications.highlight_count;
      assert.equal(after, before + 1);
    });

    test('sync shows the room with its hashed id', async () => {
      const synced = await bob.sync({ timeout: 0 });
      const room = synced.rooms.join[roomId];
      assert.ok(room, 'the room is in sync');
      assert.ok(room.timeline.events.some((e: any) => e.content.body === 'hello hydra'));
    });

    test('a trusted private chat makes its invitees creators; additional_creators must be user ids', async () => {
      const dm = await alice.createRoom({ room_version: '12', preset: 'trusted_private_chat', invite: [bob.userId], is_direct: true });
      const create = await state(alice, dm, 'm.room.create');
      assert.deepEqual(create.additional_creators, [bob.userId]);
      assert.deepEqual((await state(alice, dm, 'm.room.power_levels')).users, {});
      await bob.join(dm);
      // Bob, a creator, may send what needs the highest level.
      await bob.ok('PUT', `/rooms/${enc(dm)}/state/m.room.history_visibility/`, { history_visibility: 'joined' });
      const bad = await alice.call('POST', '/createRoom', { room_version: '12', creation_content: { additional_creators: ['not a user'] } });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errcode, 'M_INVALID_PARAM');
      const listed = await alice.call('POST', '/createRoom', { room_version: '12', power_level_content_override: { users: { [alice.userId]: 100 } } });
      assert.equal(listed.status, 400);
    });

    test('a room upgrades into v12: creators unlisted, others kept; additional_creators taken', async () => {
      const old = await alice.createRoom({ room_version: '10', preset: 'public_chat', name: 'Old' });
      await bob.join(old);
      await alice.ok('PUT', `/rooms/${enc(old)}/state/m.room.power_levels/`, { ...(await state(alice, old, 'm.room.power_levels')), users: { [alice.userId]: 100, [bob.userId]: 50 } });
      const bad = await alice.call('POST', `/rooms/${enc(old)}/upgrade`, { new_version: '12', additional_creators: 'nope' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errcode, 'M_INVALID_PARAM');
      const { replacement_room: next } = await alice.ok('POST', `/rooms/${enc(old)}/upgrade`, { new_version: '12', additional_creators: [carol.userId] });
      assert.match(next, HASHED_ROOM_ID);
      const create = await state(alice, next, 'm.room.create');
      assert.equal(create.room_version, '12');
      assert.deepEqual(create.additional_creators, [carol.userId]);
      assert.equal(create.predecessor.room_id, old);
      assert.deepEqual((await state(alice, next, 'm.room.power_levels')).users, { [bob.userId]: 50 });
      assert.equal((await state(alice, next, 'm.room.name')).name, 'Old');
      assert.equal((await state(alice, old, 'm.room.tombstone')).replacement_room, next);
      // And on from v12 to v12: the old room's creators' infinite power carries the upgrade.
      await bob.join(next);
      const { replacement_room: again } = await alice.ok('POST', `/rooms/${enc(next)}/upgrade`, { new_version: '12' });
      assert.equal((await state(alice, again, 'm.room.create')).additional_creators, undefined);
      assert.deepEqual((await state(alice, again, 'm.room.power_levels')).users, { [bob.userId]: 50 });
      // The old v12 room is restricted, its creators still unlisted.
      const restricted = await state(alice, next, 'm.room.power_levels');
      assert.equal(restricted.events_default, 50);
      assert.deepEqual(restricted.users, { [bob.userId]: 50 });
      // Back down to v11: the creator is listed at the highest level in use.
      const { replacement_room: down } = await alice.ok('POST', `/rooms/${enc(again)}/upgrade`, { new_version: '11' });
      assert.equal((await state(alice, down, 'm.room.power_levels')).users[alice.userId], 100);
    });

    test('an unknown domainless room id is refused cleanly', async () => {
      const unknown = await alice.call('GET', `/rooms/${enc('!' + 'A'.repeat(43))}/state`);
      assert.ok([403, 404].includes(unknown.status), `status ${unknown.status}`);
      assert.match(unknown.body.errcode, /^M_(FORBIDDEN|NOT_FOUND)$/);
      const join = await alice.call('POST', `/join/${enc('!' + 'B'.repeat(43))}`, {});
      assert.equal(join.status, 404);
    });
  });
}
