// A room head keeps only some state parsed: the pinned keys (create, power levels, join rules, what
// summaries show) and a bounded number of others, loaded when read. Every member's membership is
// known without loading. These tests run services whose heads keep three events beyond the pinned
// ones, on rooms of many members, restarted so that the heads start with nothing else loaded.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey } from '../../src/protocol/events.js';
import { loadRoomHead } from '../../src/rooms/head-loader.js';
import { StateNotLoaded } from '../../src/rooms/head.js';
import { RoomService, type Actor } from '../../src/rooms/service.js';
import { StateKeyNids } from '../../src/storage/rooms/state-snapshots.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, restartedRooms, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const MEMBERS = 30;
const LIMIT = 3;
const member = (i: number) => user(`m${i}`);

for (const backend of await storageBackends()) {
  describe(`room heads with state loaded on demand on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);
    /** A service as after a restart, its heads keeping LIMIT events beyond the pinned ones. */
    const restarted = (maxLoadedState = LIMIT) => restartedRooms(h, { maxLoadedState });
    const stateIds = async (rooms: RoomService, roomId: string) =>
      new Map((await rooms.state(alice, roomId)).map((e) => [`${e.type}|${e.state_key}`, e.event_id]));

    async function bigRoom(): Promise<string> {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      for (let i = 0; i < MEMBERS; i++) await h.rooms.join(member(i), roomId);
      await h.rooms.invite(alice, roomId, user('invitee').userId);
      for (let i = 0; i < 5; i++) await h.rooms.sendState(alice, roomId, 'x.key', `k${i}`, { i });
      return roomId;
    }

    test('a loaded head parses only the pinned state, knows every membership, and loads the rest when asked', async () => {
      const roomId = await bigRoom();
      const cold = await restarted();
      const head = (await loadRoomHead(h.database.db, cold.reader, new StateKeyNids(), roomId, LIMIT))!;
      assert.equal(head.stateRefs.size, (await stateIds(h.rooms, roomId)).size);
      // create, power levels, join rules, history visibility: the public_chat preset's pinned state.
      assert.equal(head.state.parsedCount, 4);
      assert.equal(head.joined, MEMBERS + 1);
      assert.equal(head.invited, 1);
      assert.equal(head.membership(member(7).userId), 'join');
      assert.equal(head.membership(user('invitee').userId), 'invite');
      assert.equal(head.membership(user('stranger').userId), 'leave');

      // Held but not loaded: reading throws; not held at all: simply absent.
      const key = stateKey('m.room.member', member(7).userId);
      assert.throws(() => head.get('m.room.member', member(7).userId), StateNotLoaded);
      assert.equal(head.get('m.room.member', user('stranger').userId), undefined);
      assert.deepEqual(head.missing([key, stateKey('m.room.create', '')]), [key]);
      await head.load([key]);
      assert.equal(head.get('m.room.member', member(7).userId)?.content.membership, 'join');

      // Loading more than the bound keeps the newest LIMIT (and what was asked for together).
      for (let i = 10; i < 20; i++) await head.load([stateKey('m.room.member', member(i).userId)]);
      assert.equal(head.state.parsedCount, 4 + LIMIT);
      assert.equal(head.get('m.room.member', member(19).userId)?.content.membership, 'join');
      assert.throws(() => head.get('m.room.member', member(10).userId), StateNotLoaded);
      const many = Array.from({ length: 6 }, (_, i) => stateKey('m.room.member', member(i).userId));
      await head.load(many);
      for (let i = 0; i < 6; i++) assert.equal(head.get('m.room.member', member(i).userId)?.content.membership, 'join');
      // Read without keeping: every member, the bound untouched.
      const all = await head.read(Array.from({ length: MEMBERS }, (_, i) => stateKey('m.room.member', member(i).userId)));
      assert.equal(all.size, MEMBERS);
      assert.ok(head.state.parsedCount <= 4 + 6);
    });

    test('sends, kicks, bans, leaves, profile changes and redactions on unloaded members give the state a full head gives', async () => {
      const roomId = await bigRoom();
      const cold = await restarted();
      // Every member speaks: each send's authorization reads the sender's member event.
      await Promise.all(Array.from({ length: MEMBERS }, (_, i) => cold.sendMessage(member(i), roomId, 'm.room.message', { body: `m${i}` })));
      await cold.kick(alice, roomId, member(1).userId, { reason: 'kicked' });
      await cold.ban(alice, roomId, member(2).userId);
      await cold.leave(member(3), roomId);
      await cold.updateMemberProfiles(member(4).userId, { displayname: 'Four' });
      await cold.invite(alice, roomId, user('friend').userId);
      await cold.join(user('invitee'), roomId);

      // A member event redacted while its head has not loaded it: later reads see it redacted.
      await cold.updateMemberProfiles(member(6).userId, { displayname: 'Six' });
      const again = await restarted();
      const sixId = (await stateIds(again, roomId)).get(`m.room.member|${member(6).userId}`)!;
      await again.redact(alice, roomId, sixId);
      await again.sendMessage(member(6), roomId, 'm.room.message', { body: 'still here' });
      const six = await again.stateEvent(alice, roomId, 'm.room.member', member(6).userId);
      assert.deepEqual(six, { membership: 'join' });

      // Refused as a full head refuses: the kicked and the banned cannot speak, the banned cannot return.
      await rejectsWith(again.sendMessage(member(1), roomId, 'm.room.message', { body: 'x' }), 403, 'M_FORBIDDEN', /not joined/);
      await rejectsWith(again.join(member(2), roomId), 403, 'M_FORBIDDEN', /banned/);

      // The same state and member lists from a head that keeps everything parsed.
      const full = await restarted(1_000_000);
      assert.deepEqual(await stateIds(again, roomId), await stateIds(full, roomId));
      const joined = Object.keys(await full.joinedMembers(alice, roomId)).sort();
      const expected = [alice, ...Array.from({ length: MEMBERS }, (_, i) => member(i)), user('invitee')]
        .map((a: Actor) => a.userId)
        .filter((u) => ![member(1).userId, member(2).userId, member(3).userId].includes(u))
        .sort();
      assert.deepEqual(joined, expected);
      const row = await h.database.db.selectFrom('rooms').select(['joined_members', 'invited_members']).where('room_id', '=', roomId).executeTakeFirstOrThrow();
      assert.equal(row.joined_members, expected.length);
      assert.equal(row.invited_members, 1);
      const head = (await loadRoomHead(h.database.db, full.reader, new StateKeyNids(), roomId))!;
      assert.equal(head.joined, expected.length);
      assert.equal(head.membership(user('friend').userId), 'invite');
      await head.load([stateKey('m.room.member', member(4).userId)]);
      assert.equal(head.get('m.room.member', member(4).userId)?.content.displayname, 'Four');
    });

    test('guests are found among unloaded members when guest access ends', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        initialState: [{ type: 'm.room.guest_access', stateKey: '', content: { guest_access: 'can_join' } }],
      });
      const guests: Actor[] = [1, 2, 3].map((i) => ({ ...user(`guest${i}`), isGuest: true }));
      for (const g of guests) await h.rooms.join(g, roomId);
      for (let i = 0; i < 10; i++) await h.rooms.join(member(i), roomId);
      const cold = await restarted();
      await cold.sendState(alice, roomId, 'm.room.guest_access', '', { guest_access: 'forbidden' });
      const membership = async (a: Actor) => ((await cold.stateEvent(alice, roomId, 'm.room.member', a.userId)) as { membership?: unknown }).membership;
      for (const g of guests) assert.equal(await membership(g), 'leave');
      assert.equal(await membership(member(3)), 'join');
    });
  });
}
