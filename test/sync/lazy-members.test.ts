// Lazy-loaded members over real HTTP, on SQLite and PostgreSQL: an incremental sync does not send
// a member event again that the same device was already sent (unless the filter asks for redundant
// members); a changed member event is new and is sent; each device has its own record, and an
// initial sync starts it over. Then the bounds of that record, on its own.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SentMembers } from '../../src/sync/lazy-members.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients, enc, timelineOf } from './sync-client.js';

const lazy = { room: { timeline: { limit: 1 }, state: { lazy_load_members: true } } };
const redundant = { room: { timeline: { limit: 1 }, state: { lazy_load_members: true, include_redundant_members: true } } };

/** The users whose member events are in the room's `state` section, sorted. */
function stateMembers(sync: any, roomId: string): string[] {
  const room = sync.rooms.join[roomId];
  assert.ok(room, 'the room is in the response');
  return room.state.events.filter((e: any) => e.type === 'm.room.member').map((e: any) => e.state_key as string).sort();
}

for (const { backend, skip } of await serverBackends()) {
  describe(`lazy-loaded members on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    /** Another device of the same account, logged in with the password every test account has. */
    async function secondDevice(c: Client): Promise<Client> {
      const res = await c.http.post('/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: c.userId }, password: 'secret' }, { token: null });
      assert.equal(res.status, 200);
      const body = res.body as { user_id: string; access_token: string; device_id: string };
      assert.notEqual(body.device_id, c.user.deviceId);
      return new Client(hs, { userId: body.user_id, accessToken: body.access_token, deviceId: body.device_id });
    }

    test('a member event the device has is not sent again; a changed one is; redundant members when asked', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat', name: 'Lazy' });
      await bob.join(roomId);
      await carol.join(roomId);
      await bob.text(roomId, 'b0');
      const s1 = await alice.sync({ filter: lazy });
      assert.deepEqual(stateMembers(s1, roomId), [alice.userId, bob.userId].sort());

      // Bob again, several times: his member event came with the initial sync.
      let since = s1.next_batch;
      for (let i = 1; i <= 3; i++) {
        const m = await bob.text(roomId, `b${i}`);
        const s = await alice.sync({ since, filter: lazy });
        assert.deepEqual(timelineOf(s, roomId).map((e: any) => e.event_id), [m]);
        assert.deepEqual(stateMembers(s, roomId), [], `bob's member event is not repeated (sync ${i})`);
        since = s.next_batch;
      }
      // Carol is new to the client, then known.
      await carol.text(roomId, 'c1');
      const s2 = await alice.sync({ since, filter: lazy });
      assert.deepEqual(stateMembers(s2, roomId), [carol.userId]);
      await bob.text(roomId, 'b4');
      await carol.text(roomId, 'c2');
      const s3 = await alice.sync({ since: s2.next_batch, filter: lazy });
      assert.equal(s3.rooms.join[roomId].timeline.limited, true);
      assert.deepEqual(stateMembers(s3, roomId), []);

      // Bob's member event changes (out of the timeline, in the gap): the new one is sent once.
      await bob.ok('PUT', `/profile/${enc(bob.userId)}/displayname`, { displayname: 'Robert' });
      await bob.text(roomId, 'b5');
      const s4 = await alice.sync({ since: s3.next_batch, filter: lazy });
      assert.equal(s4.rooms.join[roomId].timeline.limited, true);
      const renamed = s4.rooms.join[roomId].state.events.filter((e: any) => e.type === 'm.room.member');
      assert.deepEqual(renamed.map((e: any) => [e.state_key, e.content.displayname]), [[bob.userId, 'Robert']]);
      await bob.text(roomId, 'b6');
      const s5 = await alice.sync({ since: s4.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(s5, roomId), []);

      // include_redundant_members: the sender's member event every time.
      await bob.text(roomId, 'b7');
      const r1 = await alice.sync({ since: s5.next_batch, filter: redundant });
      assert.deepEqual(stateMembers(r1, roomId), [bob.userId]);
      await bob.text(roomId, 'b8');
      const r2 = await alice.sync({ since: r1.next_batch, filter: redundant });
      assert.deepEqual(stateMembers(r2, roomId), [bob.userId]);
    });

    test('each device has its own record, and an initial sync starts it over', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat', name: 'Devices' });
      await bob.join(roomId);
      await carol.join(roomId);
      await carol.text(roomId, 'c0');
      await bob.text(roomId, 'b0');
      const phone = await secondDevice(alice);

      const d1 = await alice.sync({ filter: lazy });
      assert.deepEqual(stateMembers(d1, roomId), [alice.userId, bob.userId].sort());
      await carol.text(roomId, 'c1');
      const d2 = await alice.sync({ since: d1.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(d2, roomId), [carol.userId]);

      // The phone starts now: it never got carol's member event, whatever the first device got.
      await bob.text(roomId, 'b1');
      const p1 = await phone.sync({ filter: lazy });
      assert.deepEqual(stateMembers(p1, roomId), [alice.userId, bob.userId].sort());
      await carol.text(roomId, 'c2');
      const p2 = await phone.sync({ since: p1.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(p2, roomId), [carol.userId]);
      const d3 = await alice.sync({ since: d2.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(d3, roomId), [], 'the first device has carol already');

      // A new initial sync on the first device: only carol comes with its timeline, so bob's member
      // event, sent in the earlier sequence, is sent again when he next speaks.
      const fresh = await alice.sync({ filter: lazy });
      assert.deepEqual(stateMembers(fresh, roomId), [alice.userId, carol.userId].sort());
      await bob.text(roomId, 'b2');
      const d4 = await alice.sync({ since: fresh.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(d4, roomId), [bob.userId]);
      // The phone's sequence goes on: bob's member event is known there.
      const p3 = await phone.sync({ since: p2.next_batch, filter: lazy });
      assert.deepEqual(stateMembers(p3, roomId), []);
    });
  });
}

describe('the record of sent member events', () => {
  test('keeps at most so many per device, and drops the least recently used', () => {
    const sent = new SentMembers({ perDevice: 3, total: 100, maxAgeMs: 1000 }, () => 0);
    const d = sent.of('@a:x', 'D', false);
    for (let i = 1; i <= 4; i++) d.add(1, `@u${i}:x`, i);
    assert.equal(sent.entries, 3);
    assert.equal(d.has(1, '@u1:x', 1), false);
    assert.equal(d.has(1, '@u4:x', 4), true);
    // Only that exact event counts; another room is another entry.
    assert.equal(d.has(1, '@u4:x', 5), false);
    assert.equal(d.has(2, '@u4:x', 4), false);
    // Adding again replaces the entry.
    d.add(1, '@u4:x', 6);
    assert.equal(d.has(1, '@u4:x', 6), true);
    assert.equal(sent.entries, 3);
  });

  test('keeps at most so many in all, dropping the device used least recently', () => {
    const sent = new SentMembers({ perDevice: 10, total: 5, maxAgeMs: 1000 }, () => 0);
    const a = sent.of('@a:x', 'A', false);
    for (let i = 0; i < 3; i++) a.add(1, `@u${i}:x`, i);
    const b = sent.of('@b:x', 'B', false);
    for (let i = 0; i < 3; i++) b.add(1, `@u${i}:x`, i);
    assert.ok(sent.entries <= 5);
    assert.equal(sent.of('@a:x', 'A', false).has(1, '@u0:x', 0), false, 'A was dropped whole');
    assert.equal(sent.of('@b:x', 'B', false).has(1, '@u2:x', 2), true);
    // A record dropped while in use keeps nothing and counts nothing.
    a.add(1, '@late:x', 9);
    assert.ok(sent.entries <= 5);
  });

  test('forgets a device unused for the maximum age; an initial sync clears its record', () => {
    let now = 0;
    const sent = new SentMembers({ perDevice: 10, total: 100, maxAgeMs: 1000 }, () => now);
    sent.of('@a:x', 'A', false).add(1, '@u:x', 1);
    now = 500;
    assert.equal(sent.of('@a:x', 'A', false).has(1, '@u:x', 1), true);
    now = 1400;
    assert.equal(sent.of('@a:x', 'A', false).has(1, '@u:x', 1), true, 'used at 500: still young');
    now = 2500;
    assert.equal(sent.of('@b:x', 'B', false).has(1, '@u:x', 1), false);
    assert.equal(sent.entries, 0, 'A is gone');
    const a = sent.of('@a:x', 'A', false);
    a.add(1, '@u:x', 1);
    assert.equal(sent.of('@a:x', 'A', true).has(1, '@u:x', 1), false);
    assert.equal(sent.entries, 0);
  });
});
