// A room that stops admitting guests loses them: when m.room.guest_access becomes anything but
// can_join, every guest of this server in the room leaves by a leave event of their own; they see
// the leave in sync and can no longer send. Real guest accounts over HTTP, SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients, enc, timelineOf } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`guests leave when guest access ends on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });
    let user: (name: string) => Promise<Client>;
    before(() => {
      user = clients(hs);
    });

    async function guest(): Promise<Client> {
      const r = await new HttpClient(hs.baseUrl).post('/register', {}, { query: { kind: 'guest' } });
      const body = r.body;
      assert.equal(r.status, 200, JSON.stringify(body));
      return new Client(hs, { userId: body.user_id, accessToken: body.access_token, deviceId: body.device_id });
    }

    async function guestRoom(owner: Client): Promise<string> {
      return owner.createRoom({ preset: 'public_chat', initial_state: [{ type: 'm.room.guest_access', state_key: '', content: { guest_access: 'can_join' } }] });
    }

    const member = (c: Client, roomId: string, userId: string) => c.ok('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(userId)}`);

    test('guest_access forbidden: each guest leaves by their own event, sees it in sync, and can no longer send', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await guestRoom(alice);
      const g1 = await guest();
      const g2 = await guest();
      for (const c of [g1, g2, bob]) await c.join(roomId);
      assert.equal((await member(alice, roomId, g1.userId)).kind, 'guest');
      assert.equal((await member(alice, roomId, bob.userId)).kind, undefined);
      await g1.text(roomId, 'a guest speaks');
      const since = (await g1.sync({ timeout: 0 })).next_batch as string;

      const changed = (await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.guest_access/`, { guest_access: 'forbidden' })).event_id as string;

      // Both guests' leaves are in the room, after the change, sent by the guests themselves.
      const page = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=20`);
      const chunk: any[] = page.chunk;
      const changeAt = chunk.findIndex((e) => e.event_id === changed);
      assert.ok(changeAt >= 0);
      for (const g of [g1, g2]) {
        const leave = chunk.findIndex((e) => e.type === 'm.room.member' && e.state_key === g.userId && e.content.membership === 'leave');
        assert.ok(leave >= 0 && leave < changeAt, `${g.userId}'s leave after the change`);
        assert.equal(chunk[leave].sender, g.userId);
        assert.equal((await member(alice, roomId, g.userId)).membership, 'leave');
      }
      assert.equal((await member(alice, roomId, bob.userId)).membership, 'join');
      const joined = await alice.ok('GET', `/rooms/${enc(roomId)}/joined_members`);
      assert.deepEqual(Object.keys(joined.joined).sort(), [alice.userId, bob.userId].sort());

      // The guest's sync moves the room to "leave", with the leave in its timeline.
      const sync = await g1.sync({ since, timeout: 0 });
      assert.equal(sync.rooms?.join?.[roomId], undefined);
      const left = timelineOf(sync, roomId, 'leave');
      assert.ok(left.some((e: any) => e.type === 'm.room.member' && e.state_key === g1.userId && e.content.membership === 'leave'), JSON.stringify(sync.rooms));

      const send = await g1.call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/after`, { msgtype: 'm.text', body: 'still here?' });
      assert.equal(send.status, 403, JSON.stringify(send.body));
      assert.equal(send.body.errcode, 'M_FORBIDDEN');
      // Nor may they come back.
      assert.equal((await g1.call('POST', `/join/${enc(roomId)}`, {})).status, 403);
    });

    test('any value but can_join removes guests; can_join again, or other state, keeps them', async () => {
      const alice = await user('alice');
      const roomId = await guestRoom(alice);
      const g = await guest();
      await g.join(roomId);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.topic/`, { topic: 'unrelated' });
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.guest_access/`, { guest_access: 'can_join', note: 'restated' });
      assert.equal((await member(alice, roomId, g.userId)).membership, 'join');
      await g.text(roomId, 'still welcome');

      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.guest_access/`, { guest_access: 'org.example.unknown' });
      assert.equal((await member(alice, roomId, g.userId)).membership, 'leave');
    });
  });
}
