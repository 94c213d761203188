// Presence when users start sharing a room, over real HTTP on SQLite and PostgreSQL: as the
// reference server does, the incremental sync after a join carries the current presence of the
// room's members for the joiner, and the joiner's for the members, though nobody's presence changed
// since; a user who never had any reads as offline. Once told, it is not repeated.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, type Client } from './sync-client.js';

/** The m.presence events of a response, by sender. */
function presenceBySender(sync: any): Map<string, any> {
  const out = new Map<string, any>();
  for (const e of sync.presence.events) {
    assert.equal(e.type, 'm.presence');
    assert.ok(!out.has(e.sender), `one presence event per user: ${e.sender}`);
    out.set(e.sender, e.content);
  }
  return out;
}

const quiet = { set_presence: 'offline' };

for (const { backend, skip } of await serverBackends()) {
  describe(`presence on join on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    const setStatus = (c: Client, presence: string, status_msg: string) =>
      c.ok('PUT', `/presence/${enc(c.userId)}/status`, { presence, status_msg });

    test('joiner and members learn each other\'s presence in the sync after the join', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await setStatus(alice, 'online', 'here');
      await setStatus(bob, 'unavailable', 'there');
      // Both past their own changes; they share no room yet, so neither hears of the other.
      const a1 = await alice.sync(quiet);
      const b1 = await bob.sync(quiet);
      assert.ok(!presenceBySender(a1).has(bob.userId));
      assert.ok(!presenceBySender(b1).has(alice.userId));

      await bob.join(roomId);
      const b2 = await bob.sync({ ...quiet, since: b1.next_batch });
      assert.ok(b2.rooms.join[roomId]);
      const toBob = presenceBySender(b2);
      assert.equal(toBob.get(alice.userId)?.presence, 'online');
      assert.equal(toBob.get(alice.userId)?.status_msg, 'here');
      assert.ok(!toBob.has(bob.userId), 'not his own, which did not change');

      const a2 = await alice.sync({ ...quiet, since: a1.next_batch });
      const toAlice = presenceBySender(a2);
      assert.equal(toAlice.get(bob.userId)?.presence, 'unavailable');
      assert.equal(toAlice.get(bob.userId)?.status_msg, 'there');
      assert.ok(!toAlice.has(alice.userId));

      // Told once: a later sync with nothing new about them has none.
      await alice.text(roomId, 'hello');
      const a3 = await alice.sync({ ...quiet, since: a2.next_batch });
      assert.deepEqual(a3.presence.events, []);
      const b3 = await bob.sync({ ...quiet, since: b2.next_batch });
      assert.deepEqual(b3.presence.events, []);

      // Carol never had a presence: she reads as offline, to both of them.
      await carol.join(roomId);
      const a4 = await alice.sync({ ...quiet, since: a3.next_batch });
      assert.deepEqual(presenceBySender(a4).get(carol.userId), { presence: 'offline' });
      const b4 = await bob.sync({ ...quiet, since: b3.next_batch });
      assert.deepEqual(presenceBySender(b4).get(carol.userId), { presence: 'offline' });
      // And the filter still applies.
      await (await user('dave')).join(roomId);
      const a5 = await alice.sync({ ...quiet, since: a4.next_batch, filter: { presence: { not_types: ['m.presence'] } } });
      assert.deepEqual(a5.presence.events, []);
    });

    test('an invite tells the invitee\'s presence too; a join and leave in one sync does not', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const eve = await user('eve');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await setStatus(bob, 'online', 'invited');
      await setStatus(eve, 'online', 'passing by');
      const a1 = await alice.sync(quiet);
      await alice.invite(roomId, bob.userId);
      await eve.join(roomId);
      await eve.leave(roomId);
      const a2 = await alice.sync({ ...quiet, since: a1.next_batch });
      const told = presenceBySender(a2);
      assert.equal(told.get(bob.userId)?.status_msg, 'invited');
      assert.ok(!told.has(eve.userId), 'eve left again');
    });
  });
}
