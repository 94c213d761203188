// A member who leaves a room with history_visibility "joined" and later rejoins, over real HTTP on
// SQLite and PostgreSQL. As the reference server does: the sync after the rejoin shows the room
// as new (limited, with the state at the timeline's start), and its timeline holds what the user
// may see (before the leave, the leave, the rejoin and after) plus the state events of the time
// away that are still the room's current state (who joined meanwhile, the new topic); what was
// said while away, and memberships since replaced, stay hidden. /messages applies the visibility
// rules alone: paging back over the time away shows none of it.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, type Client } from './sync-client.js';

const ids = (events: readonly any[]): string[] => events.map((e) => e.event_id as string);

/** Every event of the room as `c` may read it, oldest first. */
async function readable(c: Client, roomId: string): Promise<any[]> {
  const out: any[] = [];
  let from: string | undefined;
  for (let guard = 0; guard < 50; guard++) {
    const page = await c.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=7${from !== undefined ? `&from=${enc(from)}` : ''}`);
    out.push(...page.chunk);
    if (page.end === undefined) return out.reverse();
    from = page.end;
  }
  throw new Error('paging did not end');
}

for (const { backend, skip } of await serverBackends()) {
  describe(`rejoining a "joined" room on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('the sync after a rejoin, and /messages over the time away', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const dave = await user('dave');
      const eve = await user('eve');
      const roomId = await alice.createRoom({
        preset: 'public_chat',
        name: 'Rejoin',
        initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'joined' } }],
      });
      await bob.join(roomId);
      const before = await alice.text(roomId, 'before');
      const b1 = await bob.sync();
      await bob.leave(roomId);
      const b2 = await bob.sync({ since: b1.next_batch });
      assert.ok(b2.rooms.leave[roomId]);

      // While bob is away: joins, a message, a join undone, a new topic.
      await carol.join(roomId);
      const whileAway = await alice.text(roomId, 'while away');
      await dave.join(roomId);
      await eve.join(roomId);
      await eve.leave(roomId);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.topic/`, { topic: 'new topic' });
      await bob.join(roomId);
      const back = await alice.text(roomId, 'back');

      // Alice, joined throughout, sees every event; bob's view is cut from it.
      const all = await readable(alice, roomId);
      const index = (pred: (e: any) => boolean) => all.findIndex(pred);
      const member = (userId: string, membership: string, nth = 0) =>
        all.filter((e) => e.type === 'm.room.member' && e.state_key === userId && e.content.membership === membership)[nth];
      const bobJoin1 = member(bob.userId, 'join', 0);
      const bobLeave = member(bob.userId, 'leave');
      const bobJoin2 = member(bob.userId, 'join', 1);
      const eveJoin = member(eve.userId, 'join');
      const eveLeave = member(eve.userId, 'leave');
      const topic = all.find((e) => e.type === 'm.room.topic');
      const visibility = all.find((e) => e.type === 'm.room.history_visibility');
      for (const e of [bobJoin1, bobLeave, bobJoin2, eveJoin, eveLeave, topic, visibility]) assert.ok(e);
      assert.deepEqual(ids(all.slice(-2)), [bobJoin2.event_id, back]);

      // The sync after the rejoin, whole: every event but the message said while away and eve's
      // join (replaced by her leave); the joins of carol and dave, eve's leave and the topic are
      // there because they are the room's current state.
      const unlimited = { room: { timeline: { limit: 50 } } };
      const b3 = await bob.sync({ since: b2.next_batch, filter: unlimited });
      assert.equal(b3.rooms.leave[roomId], undefined);
      const room = b3.rooms.join[roomId];
      assert.ok(room, 'the room is in rooms.join');
      const expected = ids(all).filter((id) => id !== whileAway && id !== eveJoin.event_id);
      assert.deepEqual(ids(room.timeline.events), expected);
      for (const userId of [carol.userId, dave.userId]) {
        assert.ok(room.timeline.events.some((e: any) => e.type === 'm.room.member' && e.state_key === userId && e.content.membership === 'join'), userId);
      }
      assert.equal(room.timeline.limited, true, 'a room new to the client is limited');
      // The timeline starts at the room's creation: no state before it.
      assert.equal(room.timeline.events[0].type, 'm.room.create');
      assert.deepEqual(room.state.events, []);
      // From a token before the leave, the same timeline.
      const fromB1 = await bob.sync({ since: b1.next_batch, filter: unlimited });
      assert.deepEqual(ids(fromB1.rooms.join[roomId].timeline.events), expected);

      // With a limit, the latest of those events, and the state at the timeline's start.
      const b4 = await bob.sync({ since: b2.next_batch, filter: { room: { timeline: { limit: 8 } } } });
      const cut = b4.rooms.join[roomId];
      assert.deepEqual(ids(cut.timeline.events), expected.slice(-8));
      assert.equal(cut.timeline.events[0].event_id, before);
      assert.equal(cut.timeline.limited, true);
      const state = new Map(cut.state.events.map((e: any) => [`${e.type}|${e.state_key}`, e.event_id]));
      for (const key of ['m.room.create|', `m.room.member|${alice.userId}`, 'm.room.power_levels|', 'm.room.join_rules|', 'm.room.name|']) {
        assert.ok(state.has(key), `state has ${key}`);
      }
      assert.equal(state.get('m.room.history_visibility|'), visibility.event_id);
      assert.equal(state.get(`m.room.member|${bob.userId}`), bobJoin1.event_id, 'bob as he was at the timeline start');
      for (const key of [`m.room.member|${carol.userId}`, `m.room.member|${dave.userId}`, `m.room.member|${eve.userId}`, 'm.room.topic|']) {
        assert.ok(!state.has(key), `${key} is not in the state before the timeline`);
      }
      for (const e of cut.state.events) assert.ok(!ids(cut.timeline.events).includes(e.event_id), 'nothing both in state and timeline');

      // /messages: the visibility rules alone. Of the time away bob sees his own leave and rejoin
      // only; before his first join, what came after the history_visibility event is hidden.
      const seen = ids(await readable(bob, roomId));
      const hidden = new Set([
        ...ids(all.slice(index((e) => e.event_id === visibility.event_id) + 1, index((e) => e.event_id === bobJoin1.event_id))),
        ...ids(all.slice(index((e) => e.event_id === bobLeave.event_id) + 1, index((e) => e.event_id === bobJoin2.event_id))),
      ]);
      assert.ok(hidden.has(whileAway) && hidden.has(topic.event_id) && hidden.has(eveLeave.event_id));
      assert.deepEqual(seen, ids(all).filter((id) => !hidden.has(id)));
      // Paging back from the sync's prev_batch crosses the gap the same way.
      const page = await bob.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=3&from=${enc(cut.timeline.prev_batch)}`);
      assert.deepEqual(ids(page.chunk), seen.slice(0, seen.indexOf(before)).reverse().slice(0, 3));
    });
  });
}
