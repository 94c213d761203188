import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Actor } from '../../src/rooms/service.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice'); // creator, level 100
const bob = user('bob');
const carol = user('carol');
const dave = user('dave');

for (const backend of await storageBackends()) {
  describe(`membership on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    const membership = async (roomId: string, who: Actor, of: string): Promise<string | undefined> => {
      const members = await h.rooms.members(who, roomId);
      return members.find((m) => m.state_key === of)?.content.membership as string | undefined;
    };

    test('join: public rooms allow it, invite-only rooms need an invite', async () => {
      const pub = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      assert.deepEqual(await h.rooms.join(bob, pub.roomId), { roomId: pub.roomId });
      assert.equal(await membership(pub.roomId, alice, bob.userId), 'join');
      const priv = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      await rejectsWith(h.rooms.join(bob, priv.roomId), 403, 'M_FORBIDDEN', /not invited/);
      await h.rooms.invite(alice, priv.roomId, bob.userId);
      await h.rooms.join(bob, priv.roomId);
      assert.deepEqual(await h.rooms.joinedRooms(bob.userId), [pub.roomId, priv.roomId]);
    });

    test('join by alias; unknown rooms and aliases, and those of other servers, are 404', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', roomAliasName: 'joinme' });
      assert.deepEqual(await h.rooms.join(carol, `#joinme:${SERVER}`), { roomId });
      await rejectsWith(h.rooms.join(carol, `#nothing:${SERVER}`), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.join(carol, '#room:elsewhere.org'), 404, 'M_NOT_FOUND', /another server/);
      await rejectsWith(h.rooms.join(carol, `!nothing:${SERVER}`), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.join(carol, '!room:elsewhere.org'), 404, 'M_NOT_FOUND', /another server/);
      await rejectsWith(h.rooms.join(carol, 'garbage'), 400, 'M_INVALID_PARAM');
    });

    test('a repeated join with the same profile stores nothing; a changed profile sends a new member event', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      const first = (await h.rooms.stateEvent(bob, roomId, 'm.room.member', bob.userId, 'event')) as { event_id: string };
      await h.rooms.join(bob, roomId);
      const again = (await h.rooms.stateEvent(bob, roomId, 'm.room.member', bob.userId, 'event')) as { event_id: string };
      assert.equal(again.event_id, first.event_id);
      h.profiles.set(bob.userId, { displayname: 'Bobby' });
      const updated = await h.rooms.updateMemberProfiles(bob.userId, { displayname: 'Bobby' });
      assert.ok(updated.length >= 1);
      assert.deepEqual(await h.rooms.stateEvent(bob, roomId, 'm.room.member', bob.userId), { membership: 'join', displayname: 'Bobby' });
      h.profiles.delete(bob.userId);
    });

    test('guests join only rooms whose guest_access is can_join', async () => {
      const guest: Actor = { userId: `@1234:${SERVER}`, deviceId: 'G', isGuest: true };
      const closed = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await rejectsWith(h.rooms.join(guest, closed.roomId), 403, 'M_FORBIDDEN', /Guest/);
      await h.rooms.sendState(alice, closed.roomId, 'm.room.guest_access', '', { guest_access: 'can_join' });
      await h.rooms.join(guest, closed.roomId);
    });

    test('invite: needs a joined sender with the invite level; not for joined or banned targets', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' }); // invite level 50
      await h.rooms.join(bob, roomId);
      await rejectsWith(h.rooms.invite(bob, roomId, carol.userId), 403, 'M_FORBIDDEN', /invite level/);
      await rejectsWith(h.rooms.invite(dave, roomId, carol.userId), 403, 'M_FORBIDDEN', /not joined/);
      await h.rooms.invite(alice, roomId, carol.userId, { reason: 'come along' });
      assert.equal(await membership(roomId, alice, carol.userId), 'invite');
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.member', carol.userId), { membership: 'invite', reason: 'come along' });
      await rejectsWith(h.rooms.invite(alice, roomId, bob.userId), 403, 'M_FORBIDDEN', /already joined/);
      await rejectsWith(h.rooms.invite(alice, roomId, 'not a user id'), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.invite(alice, `!missing:${SERVER}`, carol.userId), 404, 'M_NOT_FOUND');
    });

    test('leave: from join or invite; not when not in the room', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'private_chat', invite: [bob.userId] });
      // Rejecting an invite is leaving.
      await h.rooms.leave(bob, roomId, { reason: 'no thanks' });
      assert.equal(await membership(roomId, alice, bob.userId), 'leave');
      await rejectsWith(h.rooms.leave(bob, roomId), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.leave(carol, roomId), 403, 'M_FORBIDDEN');
      await h.rooms.invite(alice, roomId, bob.userId);
      await h.rooms.join(bob, roomId);
      await h.rooms.leave(bob, roomId);
      assert.deepEqual(await h.rooms.joinedRooms(bob.userId).then((r) => r.includes(roomId)), false);
    });

    test('kick: needs the kick level and a higher level than the target; only members can be kicked', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        powerLevelContentOverride: { users: { [alice.userId]: 100, [bob.userId]: 50, [carol.userId]: 50 } },
      });
      await h.rooms.join(bob, roomId);
      await h.rooms.join(carol, roomId);
      await h.rooms.join(dave, roomId);
      await rejectsWith(h.rooms.kick(bob, roomId, carol.userId), 403, 'M_FORBIDDEN', /kick/);
      await rejectsWith(h.rooms.kick(dave, roomId, carol.userId), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.kick(bob, roomId, alice.userId), 403, 'M_FORBIDDEN');
      await h.rooms.kick(bob, roomId, dave.userId, { reason: 'bye' });
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.member', dave.userId), { membership: 'leave', reason: 'bye' });
      await rejectsWith(h.rooms.kick(alice, roomId, dave.userId), 403, 'M_FORBIDDEN', /not in the room/);
    });

    test('ban and unban: need the ban level; a banned user cannot join; unban only the banned', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        powerLevelContentOverride: { users: { [alice.userId]: 100, [bob.userId]: 49 } },
      });
      await h.rooms.join(bob, roomId);
      await h.rooms.join(carol, roomId);
      await rejectsWith(h.rooms.ban(bob, roomId, carol.userId), 403, 'M_FORBIDDEN', /ban level/);
      await h.rooms.ban(alice, roomId, carol.userId, { reason: 'spam' });
      assert.equal(await membership(roomId, alice, carol.userId), 'ban');
      await rejectsWith(h.rooms.join(carol, roomId), 403, 'M_FORBIDDEN', /banned/);
      await rejectsWith(h.rooms.invite(alice, roomId, carol.userId), 403, 'M_FORBIDDEN', /banned/);
      // Banning someone not in the room works too.
      await h.rooms.ban(alice, roomId, dave.userId);
      await rejectsWith(h.rooms.unban(bob, roomId, carol.userId), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.unban(alice, roomId, bob.userId), 403, 'M_FORBIDDEN', /not banned/);
      await h.rooms.unban(alice, roomId, carol.userId);
      assert.equal(await membership(roomId, alice, carol.userId), 'leave');
      await h.rooms.join(carol, roomId);
    });

    test('knock: only on knock rooms of versions that have it; the knocker can then be invited or withdraw', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        roomVersion: '10',
        roomAliasName: 'knocky',
        initialState: [{ type: 'm.room.join_rules', stateKey: '', content: { join_rule: 'knock' } }],
      });
      assert.deepEqual(await h.rooms.knock(bob, `#knocky:${SERVER}`, { reason: 'let me in' }), { roomId });
      const knock = (await h.rooms.stateEvent(alice, roomId, 'm.room.member', bob.userId, 'event')) as { content: unknown; unsigned: { knock_room_state?: unknown[] } };
      assert.deepEqual(knock.content, { membership: 'knock', reason: 'let me in' });
      assert.ok(Array.isArray(knock.unsigned.knock_room_state));
      await rejectsWith(h.rooms.join(bob, roomId), 403, 'M_FORBIDDEN');
      await h.rooms.invite(alice, roomId, bob.userId);
      await h.rooms.join(bob, roomId);
      await rejectsWith(h.rooms.knock(bob, roomId), 403, 'M_FORBIDDEN');
      await h.rooms.knock(carol, roomId);
      await h.rooms.leave(carol, roomId);
      assert.equal(await membership(roomId, alice, carol.userId), 'leave');

      const inviteOnly = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      await rejectsWith(h.rooms.knock(dave, inviteOnly.roomId), 403, 'M_FORBIDDEN', /join rule/);
      const v6 = await h.rooms.createRoom(alice, {
        roomVersion: '6',
        initialState: [{ type: 'm.room.join_rules', stateKey: '', content: { join_rule: 'knock' } }],
      });
      await rejectsWith(h.rooms.knock(dave, v6.roomId), 403, 'M_FORBIDDEN', /knock/);
    });

    test('forget: only after leaving; afterwards the room\'s history is closed to the user', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'hello' });
      await rejectsWith(h.rooms.forget(bob, roomId), 400, 'M_UNKNOWN');
      await h.rooms.leave(bob, roomId);
      assert.ok((await h.rooms.messages(bob, roomId, { dir: 'b', limit: 5 })).chunk.length > 0);
      await h.rooms.forget(bob, roomId);
      await rejectsWith(h.rooms.messages(bob, roomId, { dir: 'b', limit: 5 }), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.forget(bob, `!missing:${SERVER}`), 404, 'M_NOT_FOUND');
      // Rejoining makes the room theirs again.
      await h.rooms.join(bob, roomId);
      assert.ok((await h.rooms.messages(bob, roomId, { dir: 'b', limit: 5 })).chunk.length > 0);
    });

    test('members: all, by membership, not by membership, at a point in time; joined_members with profiles', async () => {
      h.profiles.set(bob.userId, { displayname: 'Bob B', avatar_url: 'mxc://hs.test/b' });
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', invite: [carol.userId] });
      await h.rooms.join(bob, roomId);
      const before = (await h.rooms.messages(alice, roomId, { dir: 'b', limit: 1 })).start;
      await h.rooms.join(dave, roomId);
      await h.rooms.ban(alice, roomId, dave.userId);
      const ids = (events: { state_key?: string }[]) => events.map((e) => e.state_key).sort();
      assert.deepEqual(ids(await h.rooms.members(alice, roomId)), [alice.userId, bob.userId, carol.userId, dave.userId].sort());
      assert.deepEqual(ids(await h.rooms.members(alice, roomId, { membership: 'join' })), [alice.userId, bob.userId].sort());
      assert.deepEqual(ids(await h.rooms.members(alice, roomId, { notMembership: 'join' })), [carol.userId, dave.userId].sort());
      assert.deepEqual(ids(await h.rooms.members(alice, roomId, { at: before })), [alice.userId, bob.userId, carol.userId].sort());
      assert.deepEqual(await h.rooms.joinedMembers(alice, roomId), {
        [alice.userId]: { display_name: null, avatar_url: null },
        [bob.userId]: { display_name: 'Bob B', avatar_url: 'mxc://hs.test/b' },
      });
      await rejectsWith(h.rooms.joinedMembers(carol, roomId), 403, 'M_FORBIDDEN');
      h.profiles.delete(bob.userId);
    });
  });
}
