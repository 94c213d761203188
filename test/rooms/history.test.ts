import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClientEvent } from '../../src/rooms/client-event.js';
import { encodeSyncToken } from '../../src/sync/token.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, roomsHarness, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');

const bodies = (events: ClientEvent[]) => events.filter((e) => e.type === 'm.room.message').map((e) => e.content.body);

for (const backend of await storageBackends()) {
  describe(`room history on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    async function roomWith(visibility: string): Promise<string> {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: visibility } }],
      });
      return roomId;
    }

    test('joined: a user joining later sees nothing from before the join', async () => {
      const roomId = await roomWith('joined');
      const early = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'before bob' });
      await h.rooms.join(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'after bob' });
      assert.deepEqual(bodies((await h.rooms.messages(bob, roomId, { dir: 'b', limit: 50 })).chunk), ['after bob']);
      assert.deepEqual(bodies((await h.rooms.messages(alice, roomId, { dir: 'b', limit: 50 })).chunk), ['after bob', 'before bob']);
      await rejectsWith(h.rooms.getEvent(bob, roomId, early), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.context(bob, roomId, early, { limit: 4 }), 404, 'M_NOT_FOUND');
      // Bob sees his own join.
      const chunk = (await h.rooms.messages(bob, roomId, { dir: 'b', limit: 50 })).chunk;
      assert.ok(chunk.some((e) => e.type === 'm.room.member' && e.state_key === bob.userId));
    });

    test('shared: a user joining later sees the history before their join', async () => {
      const roomId = await roomWith('shared');
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'before bob' });
      await h.rooms.join(bob, roomId);
      assert.deepEqual(bodies((await h.rooms.messages(bob, roomId, { dir: 'b', limit: 50 })).chunk), ['before bob']);
    });

    test('invited: visible from the invite on', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'private_chat',
        initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: 'invited' } }],
      });
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'before invite' });
      await h.rooms.invite(alice, roomId, bob.userId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'while invited' });
      await h.rooms.join(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'joined' });
      assert.deepEqual(bodies((await h.rooms.messages(bob, roomId, { dir: 'f', limit: 50 })).chunk), ['while invited', 'joined']);
    });

    test('world_readable: non-members read messages, events and state; others are refused', async () => {
      const roomId = await roomWith('world_readable');
      const id = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'public words' });
      assert.deepEqual(bodies((await h.rooms.messages(carol, roomId, { dir: 'b', limit: 10 })).chunk), ['public words']);
      assert.equal((await h.rooms.getEvent(carol, roomId, id)).content.body, 'public words');
      assert.ok((await h.rooms.state(carol, roomId)).some((e) => e.type === 'm.room.create'));
      assert.ok((await h.rooms.members(carol, roomId)).length >= 1);
      const closed = await roomWith('shared');
      const hidden = await h.rooms.sendMessage(alice, closed, 'm.room.message', { body: 'members only' });
      await rejectsWith(h.rooms.messages(carol, closed, { dir: 'b', limit: 10 }), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.state(carol, closed), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.stateEvent(carol, closed, 'm.room.name', ''), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.members(carol, closed), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.getEvent(carol, closed, hidden), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.context(carol, closed, hidden, { limit: 2 }), 403, 'M_FORBIDDEN');
    });

    test('a user who left sees history up to their leave, and the state as it was then', async () => {
      const roomId = await roomWith('shared');
      await h.rooms.join(bob, roomId);
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'old topic' });
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'while bob was here' });
      await h.rooms.leave(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'after bob left' });
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'new topic' });
      assert.deepEqual(bodies((await h.rooms.messages(bob, roomId, { dir: 'b', limit: 50 })).chunk), ['while bob was here']);
      assert.deepEqual(await h.rooms.stateEvent(bob, roomId, 'm.room.topic', ''), { topic: 'old topic' });
      const state = await h.rooms.state(bob, roomId);
      assert.equal(state.find((e) => e.type === 'm.room.member' && e.state_key === bob.userId)?.content.membership, 'leave');
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.topic', ''), { topic: 'new topic' });
      await rejectsWith(h.rooms.stateEvent(alice, roomId, 'm.room.avatar', ''), 404, 'M_NOT_FOUND');
    });

    test('/messages pages backwards and forwards with no gaps and no repeats', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      const sent: string[] = [];
      for (let i = 0; i < 23; i++) sent.push(await h.rooms.sendMessage(i % 3 === 0 ? bob : alice, roomId, 'm.room.message', { body: `m${i}` }));
      const all = (await h.rooms.messages(alice, roomId, { dir: 'f', limit: 1000 })).chunk.map((e) => e.event_id);
      // Backwards from the end, 4 at a time.
      const back: string[] = [];
      let from: string | undefined;
      for (let guard = 0; guard < 50; guard++) {
        const page = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 4, ...(from !== undefined ? { from } : {}) });
        assert.ok(page.chunk.length <= 4);
        back.push(...page.chunk.map((e) => e.event_id));
        if (page.end === undefined) break;
        from = page.end;
      }
      assert.deepEqual(back, [...all].reverse());
      // Forwards from the start, 5 at a time.
      const fwd: string[] = [];
      from = undefined;
      for (let guard = 0; guard < 50; guard++) {
        const page = await h.rooms.messages(alice, roomId, { dir: 'f', limit: 5, ...(from !== undefined ? { from } : {}) });
        fwd.push(...page.chunk.map((e) => e.event_id));
        if (page.end === undefined) break;
        from = page.end;
      }
      assert.deepEqual(fwd, all);
      assert.deepEqual(all.slice(-23), sent);
      // Backwards then forwards again from a middle token returns to the same events.
      const first = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 6 });
      const again = await h.rooms.messages(alice, roomId, { dir: 'f', limit: 6, from: first.end! });
      assert.deepEqual(again.chunk.map((e) => e.event_id), first.chunk.map((e) => e.event_id).reverse());
      // `to` bounds a page.
      const bounded = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 100, to: first.end! });
      assert.deepEqual(bounded.chunk.map((e) => e.event_id), first.chunk.map((e) => e.event_id));
      // A page with events has an end, though it reached the bound; from there, nothing and no end.
      assert.equal(bounded.end, first.end);
      const beyond = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 100, from: bounded.end!, to: first.end! });
      assert.deepEqual(beyond.chunk, []);
      assert.equal(beyond.end, undefined);
    });

    test('/messages accepts a sync token as `from`; bad tokens are 400 M_INVALID_PARAM', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'one' });
      const position = (await h.rooms.reader.roomEvents((await h.rooms.reader.roomInfo(roomId))!.nid, {}, 'desc', 1))[0]!.streamOrdering!;
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'two' });
      const token = encodeSyncToken({ events: position, typing: 0, receipts: 0, presence: 0, account_data: 0, to_device: 0, device_lists: 0 });
      assert.deepEqual(bodies((await h.rooms.messages(alice, roomId, { dir: 'b', limit: 10, from: token })).chunk), ['one']);
      assert.deepEqual(bodies((await h.rooms.messages(alice, roomId, { dir: 'f', limit: 10, from: token })).chunk), ['two']);
      await rejectsWith(h.rooms.messages(alice, roomId, { dir: 'b', limit: 10, from: 'garbage' }), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.messages(alice, '!nope:hs.test', { dir: 'b', limit: 10 }), 404, 'M_NOT_FOUND');
    });

    test('/messages filters: types with wildcards, not_types, senders, not_senders, contains_url, lazy members', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'text' });
      await h.rooms.sendMessage(bob, roomId, 'm.room.message', { body: 'image', url: 'mxc://hs.test/img' });
      await h.rooms.sendMessage(bob, roomId, 'm.reaction', { 'm.relates_to': { rel_type: 'm.annotation', event_id: '$x', key: 'y' } });
      for (let i = 0; i < 30; i++) await h.rooms.sendMessage(alice, roomId, 'x.noise', { i });
      const page = (filter: object, limit = 10) => h.rooms.messages(alice, roomId, { dir: 'b', limit, filter });
      assert.deepEqual((await page({ types: ['m.room.*'], not_types: ['m.room.member', 'm.room.power_levels'] })).chunk.map((e) => e.type), [
        'm.room.message',
        'm.room.message',
        'm.room.history_visibility',
        'm.room.join_rules',
        'm.room.create',
      ]);
      assert.deepEqual(bodies((await page({ senders: [bob.userId], types: ['m.room.message'] })).chunk), ['image']);
      assert.deepEqual(bodies((await page({ not_senders: [bob.userId], types: ['m.room.message'] })).chunk), ['text']);
      assert.deepEqual(bodies((await page({ contains_url: true })).chunk), ['image']);
      assert.equal((await page({ contains_url: false, types: ['m.room.message'] })).chunk.length, 1);
      // A sparse filter still walks past the noise; a short page ends the walk.
      const sparse = await page({ types: ['m.reaction'] }, 5);
      assert.deepEqual(sparse.chunk.map((e) => e.type), ['m.reaction']);
      assert.equal(typeof sparse.end, 'string');
      const rest = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 5, filter: { types: ['m.reaction'] }, from: sparse.end! });
      assert.deepEqual(rest.chunk, []);
      assert.equal(rest.end, undefined);
      const lazy = await page({ types: ['m.room.message'], lazy_load_members: true });
      assert.deepEqual(lazy.state!.map((e) => e.state_key).sort(), [alice.userId, bob.userId].sort());
    });

    test('/context: events around one, with tokens that continue the timeline', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push(await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: `c${i}` }));
      const ctx = await h.rooms.context(alice, roomId, ids[4]!, { limit: 4 });
      assert.equal(ctx.event.event_id, ids[4]);
      assert.deepEqual(ctx.events_before.map((e) => e.event_id), [ids[3], ids[2]]);
      assert.deepEqual(ctx.events_after.map((e) => e.event_id), [ids[5], ids[6]]);
      const older = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 2, from: ctx.start });
      assert.deepEqual(older.chunk.map((e) => e.event_id), [ids[1], ids[0]]);
      const newer = await h.rooms.messages(alice, roomId, { dir: 'f', limit: 2, from: ctx.end });
      assert.deepEqual(newer.chunk.map((e) => e.event_id), [ids[7], ids[8]]);
      assert.ok(ctx.state.some((e) => e.type === 'm.room.create'));
      const filtered = await h.rooms.context(alice, roomId, ids[4]!, { limit: 4, filter: { types: ['m.room.message'], lazy_load_members: true } });
      assert.deepEqual(filtered.state.map((e) => e.state_key), [alice.userId]);
      await rejectsWith(h.rooms.context(alice, roomId, '$unknown', { limit: 4 }), 404, 'M_NOT_FOUND');
    });

    test('served events carry age, prev_content for state, and transaction_id for the sending device only', async () => {
      let clock = 1_000_000;
      const timed = await roomsHarness(h.target, { now: () => clock });
      try {
        const { roomId } = await timed.rooms.createRoom(alice, {});
        await timed.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'first' });
        const second = await timed.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'second' });
        const msg = await timed.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'x' }, 'my-txn');
        clock += 5_000;
        const own = await timed.rooms.getEvent(alice, roomId, msg);
        assert.equal(own.unsigned.transaction_id, 'my-txn');
        assert.equal(own.unsigned.age, 5_000);
        assert.equal(own.origin_server_ts, 1_000_000);
        assert.equal((await timed.rooms.getEvent(user('alice', 'OTHER'), roomId, msg)).unsigned.transaction_id, undefined);
        const topic = await timed.rooms.getEvent(alice, roomId, second);
        assert.deepEqual(topic.unsigned.prev_content, { topic: 'first' });
        assert.equal(typeof topic.unsigned.replaces_state, 'string');
        assert.equal(topic.state_key, '');
        assert.equal(topic.room_id, roomId);
      } finally {
        await timed.close();
      }
    });
  });
}
