// /sync over real HTTP, on SQLite and PostgreSQL: the sections beside the timeline: ephemeral
// (typing, receipts), account data, to-device (exactly once), presence, lazy-loaded members and
// unread notification counts.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, timelineOf } from './sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`sync sections on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    /** Two users joined to a fresh public room. */
    const pair = async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      return { alice, bob, roomId };
    };

    test('typing and receipts appear in ephemeral', async () => {
      const { alice, bob, roomId } = await pair();
      const eventId = await alice.text(roomId, 'read me');
      const b1 = await bob.sync();
      await alice.ok('PUT', `/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: true, timeout: 10_000 });
      const b2 = await bob.sync({ since: b1.next_batch });
      const typing = b2.rooms.join[roomId].ephemeral.events.find((e: any) => e.type === 'm.typing');
      assert.deepEqual(typing?.content, { user_ids: [alice.userId] });
      assert.deepEqual(timelineOf(b2, roomId), [], 'only ephemeral news');

      await bob.ok('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, {});
      await alice.ok('PUT', `/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: false });
      const b3 = await bob.sync({ since: b2.next_batch });
      const ephemeral = b3.rooms.join[roomId].ephemeral.events;
      assert.deepEqual(ephemeral.find((e: any) => e.type === 'm.typing')?.content, { user_ids: [] });
      const receipt = ephemeral.find((e: any) => e.type === 'm.receipt');
      assert.equal(typeof receipt.content[eventId]['m.read'][bob.userId].ts, 'number');
      // Nothing again for the same news.
      const b4 = await bob.sync({ since: b3.next_batch });
      assert.equal(b4.rooms.join[roomId], undefined);
      // A filter can leave typing out.
      await alice.ok('PUT', `/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: true, timeout: 10_000 });
      const filtered = await bob.sync({ since: b4.next_batch, filter: { room: { ephemeral: { not_types: ['m.typing'] } } } });
      assert.equal(filtered.rooms.join[roomId], undefined);
    });

    test('account data, global and per room, arrives once', async () => {
      const { alice, roomId } = await pair();
      const a1 = await alice.sync();
      await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/im.hearth.test`, { colour: 'red' });
      await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/account_data/im.hearth.room`, { pinned: true });
      const a2 = await alice.sync({ since: a1.next_batch });
      assert.deepEqual(a2.account_data.events, [{ type: 'im.hearth.test', content: { colour: 'red' } }]);
      assert.deepEqual(a2.rooms.join[roomId].account_data.events, [{ type: 'im.hearth.room', content: { pinned: true } }]);
      const a3 = await alice.sync({ since: a2.next_batch });
      assert.deepEqual(a3.account_data.events, []);
      assert.equal(a3.rooms.join[roomId], undefined);
      // An initial sync has all of it.
      const initial = await alice.sync();
      assert.ok(initial.account_data.events.some((e: any) => e.type === 'im.hearth.test'));
      assert.ok(initial.rooms.join[roomId].account_data.events.some((e: any) => e.type === 'im.hearth.room'));
    });

    test('to-device messages are delivered exactly once', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const a1 = await alice.sync();
      await bob.ok('PUT', `/sendToDevice/m.test/${Date.now()}`, { messages: { [alice.userId]: { [alice.user.deviceId]: { n: 1 } } } });
      const a2 = await alice.sync({ since: a1.next_batch });
      assert.deepEqual(a2.to_device.events, [{ sender: bob.userId, type: 'm.test', content: { n: 1 } }]);
      // Repeating the old token (the reply was lost) gives the message again.
      const retry = await alice.sync({ since: a1.next_batch });
      assert.deepEqual(retry.to_device.events.map((e: any) => e.content), [{ n: 1 }]);
      // The new token acknowledges it: it is gone, even for the old token.
      const a3 = await alice.sync({ since: a2.next_batch });
      assert.deepEqual(a3.to_device.events, []);
      const late = await alice.sync({ since: a1.next_batch });
      assert.deepEqual(late.to_device.events, []);
    });

    test("presence of users sharing a room; set_presence=offline leaves one's own alone", async () => {
      const { alice, bob } = await pair();
      const a1 = await alice.sync({ set_presence: 'offline' });
      await bob.ok('PUT', `/presence/${enc(bob.userId)}/status`, { presence: 'unavailable', status_msg: 'lunch' });
      const a2 = await alice.sync({ since: a1.next_batch, set_presence: 'offline' });
      const p = a2.presence.events.find((e: any) => e.sender === bob.userId);
      assert.equal(p?.type, 'm.presence');
      assert.equal(p.content.presence, 'unavailable');
      assert.equal(p.content.status_msg, 'lunch');
      assert.ok(!a2.presence.events.some((e: any) => e.sender === alice.userId), 'syncing offline did not announce alice');
      const a3 = await alice.sync({ since: a2.next_batch, filter: { presence: { not_types: ['m.presence'] } } });
      assert.deepEqual(a3.presence.events, []);
    });

    test('lazy-loaded members: only the senders in the timeline, the user and the heroes', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat', name: 'Lazy' });
      await bob.join(roomId);
      await carol.join(roomId);
      await carol.text(roomId, 'early');
      for (let i = 0; i < 3; i++) await bob.text(roomId, `late${i}`);
      const lazy = { room: { timeline: { limit: 3 }, state: { lazy_load_members: true } } };
      const s = await alice.sync({ filter: lazy });
      const members = s.rooms.join[roomId].state.events.filter((e: any) => e.type === 'm.room.member').map((e: any) => e.state_key).sort();
      assert.deepEqual(members, [alice.userId, bob.userId].sort());
      assert.ok(s.rooms.join[roomId].state.events.some((e: any) => e.type === 'm.room.power_levels'), 'other state is whole');
      // Unnamed, the room has heroes, and their member events come along.
      const unnamed = await alice.createRoom({ preset: 'public_chat' });
      await carol.join(unnamed);
      await bob.join(unnamed);
      for (let i = 0; i < 3; i++) await bob.text(unnamed, `x${i}`);
      const withHeroes = await alice.sync({ filter: lazy });
      const unnamedRoom = withHeroes.rooms.join[unnamed];
      assert.deepEqual(unnamedRoom.summary['m.heroes'], [carol.userId, bob.userId]);
      assert.ok(unnamedRoom.state.events.some((e: any) => e.type === 'm.room.member' && e.state_key === carol.userId));
      const full = await alice.sync({ filter: { room: { timeline: { limit: 3 } } } });
      const all = full.rooms.join[roomId].state.events.filter((e: any) => e.type === 'm.room.member').map((e: any) => e.state_key);
      assert.ok(all.includes(carol.userId));
      // Incrementally, a new sender's member event comes with their message (here from the gap
      // before the timeline; a join already sent in a timeline is not sent again).
      const dave = await user('dave');
      const s2base = await alice.sync({ filter: lazy, since: s.next_batch });
      await dave.join(roomId);
      for (let i = 0; i < 5; i++) await bob.text(roomId, `more${i}`);
      await dave.text(roomId, 'hi from dave');
      const s2 = await alice.sync({ filter: lazy, since: s2base.next_batch });
      const room = s2.rooms.join[roomId];
      assert.equal(room.timeline.limited, true);
      assert.ok(room.state.events.some((e: any) => e.type === 'm.room.member' && e.state_key === dave.userId));
    });

    test('unread notification counts follow messages, mentions and the read receipt', async () => {
      const { alice, bob, roomId } = await pair();
      const b1 = await bob.sync();
      assert.deepEqual(b1.rooms.join[roomId].unread_notifications, { notification_count: 0, highlight_count: 0 });
      await alice.text(roomId, 'plain');
      const mention = await alice.send(roomId, { msgtype: 'm.text', body: 'hey bob', 'm.mentions': { user_ids: [bob.userId] } });
      await bob.text(roomId, 'my own');
      const b2 = await bob.sync({ since: b1.next_batch });
      assert.deepEqual(b2.rooms.join[roomId].unread_notifications, { notification_count: 2, highlight_count: 1 });
      // Alice's own messages never count for her.
      const a = await alice.sync();
      assert.deepEqual(a.rooms.join[roomId].unread_notifications, { notification_count: 1, highlight_count: 0 });
      await bob.ok('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(mention)}`, {});
      const b3 = await bob.sync({ since: b2.next_batch });
      assert.deepEqual(b3.rooms.join[roomId].unread_notifications, { notification_count: 0, highlight_count: 0 });
      await alice.text(roomId, 'again');
      const b4 = await bob.sync({ since: b3.next_batch });
      assert.deepEqual(b4.rooms.join[roomId].unread_notifications, { notification_count: 1, highlight_count: 0 });
      // An initial sync counts the same.
      assert.deepEqual((await bob.sync()).rooms.join[roomId].unread_notifications, { notification_count: 1, highlight_count: 0 });
      // @room from someone with the power to notify the room highlights; from bob (power 0) it would not.
      await alice.send(roomId, { msgtype: 'm.text', body: 'everyone!', 'm.mentions': { room: true } });
      const b5 = await bob.sync({ since: b4.next_batch });
      assert.deepEqual(b5.rooms.join[roomId].unread_notifications, { notification_count: 2, highlight_count: 1 });
      await bob.send(roomId, { msgtype: 'm.text', body: 'everyone?', 'm.mentions': { room: true } });
      const a2 = await alice.sync({ since: a.next_batch });
      assert.equal(a2.rooms.join[roomId].unread_notifications.highlight_count, 0);
      assert.ok(a2.rooms.join[roomId].unread_notifications.notification_count >= 1);
    });
  });
}
