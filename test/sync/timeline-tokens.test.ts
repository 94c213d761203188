// Sync timelines and /messages over real HTTP, on SQLite and PostgreSQL: paging back from a sync's
// prev_batch (limited or not, initial or incremental) returns every earlier event once; /messages
// gives an `end` whenever it returned events, in either direction, and none for an empty page at
// the end; paging forward from an `end` later returns what was sent since. A room newly joined in
// an incremental sync has a limited timeline, whatever its filter left out.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, timelineOf, type Client } from './sync-client.js';

const ids = (events: readonly any[]): string[] => events.map((e) => e.event_id as string);

/** Every event of the room the user may see, oldest first, read forwards from the start in one page. */
async function wholeRoom(c: Client, roomId: string): Promise<string[]> {
  const page = await c.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=1000`);
  return ids(page.chunk);
}

/**
 * Pages backwards from `from` `limit` events at a time until the server gives no `end`; returns
 * the events newest first. Every page with events must carry an `end`.
 */
async function pageBack(c: Client, roomId: string, from: string, limit: number): Promise<string[]> {
  const out: string[] = [];
  let token = from;
  for (let guard = 0; guard < 100; guard++) {
    const page = await c.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=${limit}&from=${enc(token)}`);
    assert.equal(page.start, token);
    assert.ok(page.chunk.length <= limit);
    out.push(...ids(page.chunk));
    if (page.chunk.length > 0) assert.equal(typeof page.end, 'string', 'a page with events has an end');
    if (page.end === undefined) {
      assert.deepEqual(page.chunk, [], 'only an empty page ends the walk');
      return out;
    }
    token = page.end;
  }
  throw new Error('paging back did not end');
}

for (const { backend, skip } of await serverBackends()) {
  describe(`timeline tokens on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('prev_batch of a limited initial sync pages back over every earlier event once', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ name: 'Paging' });
      for (let i = 0; i < 9; i++) await alice.text(roomId, `m${i}`);
      const all = await wholeRoom(alice, roomId);
      const s = await alice.sync({ filter: { room: { timeline: { limit: 4 } } } });
      const room = s.rooms.join[roomId];
      assert.equal(room.timeline.limited, true);
      const shown = ids(room.timeline.events);
      assert.deepEqual(shown, all.slice(-4));
      const earlier = await pageBack(alice, roomId, room.timeline.prev_batch, 3);
      assert.deepEqual(earlier, all.slice(0, -4).reverse());
    });

    test('prev_batch of unlimited timelines, initial and incremental, pages back with nothing missing or repeated', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      await alice.text(roomId, 'first');
      const s1 = await alice.sync();
      const first = s1.rooms.join[roomId].timeline;
      assert.equal(first.limited, false);
      // Nothing before the room's first event.
      assert.deepEqual(await pageBack(alice, roomId, first.prev_batch, 2), []);

      let since = s1.next_batch;
      const seen = [...ids(first.events)];
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i <= round; i++) await alice.text(roomId, `r${round}.${i}`);
        const s = await alice.sync({ since });
        const timeline = s.rooms.join[roomId].timeline;
        assert.equal(timeline.limited, false);
        assert.equal(timeline.events.length, round + 1);
        // Back from this timeline's start: exactly what the earlier syncs gave, newest first.
        assert.deepEqual(await pageBack(alice, roomId, timeline.prev_batch, 2), [...seen].reverse(), `round ${round}`);
        seen.push(...ids(timeline.events));
        since = s.next_batch;
      }
      assert.deepEqual(seen, await wholeRoom(alice, roomId));
    });

    test('prev_batch of a limited incremental sync pages back over the gap and then the earlier syncs', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const s1 = await alice.sync();
      for (let i = 0; i < 14; i++) await alice.text(roomId, `g${i}`);
      const s2 = await alice.sync({ since: s1.next_batch, filter: { room: { timeline: { limit: 5 } } } });
      const timeline = s2.rooms.join[roomId].timeline;
      assert.equal(timeline.limited, true);
      const all = await wholeRoom(alice, roomId);
      assert.deepEqual(ids(timeline.events), all.slice(-5));
      assert.deepEqual(await pageBack(alice, roomId, timeline.prev_batch, 4), all.slice(0, -5).reverse());
    });

    test('dir=f reaching the newest event gives an end; from it, later events; at the end, no end', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const sent: string[] = [];
      for (let i = 0; i < 3; i++) sent.push(await alice.text(roomId, `f${i}`));
      const s = await alice.sync({ filter: { room: { timeline: { limit: 2 } } } });
      // From the start of the sync's timeline, forwards past the newest event.
      const forward = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=10&from=${enc(s.rooms.join[roomId].timeline.prev_batch)}`);
      assert.deepEqual(ids(forward.chunk), sent.slice(1));
      assert.equal(typeof forward.end, 'string', 'a page with events has an end, though it reached the newest');
      // Nothing new yet: an empty page, and no end.
      const empty = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=10&from=${enc(forward.end)}`);
      assert.deepEqual(empty.chunk, []);
      assert.equal(empty.end, undefined);
      assert.equal(empty.start, forward.end);
      // Later events come from the same end.
      const later = [await alice.text(roomId, 'later 1'), await alice.text(roomId, 'later 2')];
      const next = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=1&from=${enc(forward.end)}`);
      assert.deepEqual(ids(next.chunk), later.slice(0, 1));
      const last = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=10&from=${enc(next.end)}`);
      assert.deepEqual(ids(last.chunk), later.slice(1));
      assert.equal(typeof last.end, 'string');
      // The sync token is a valid forward start too.
      const fromSync = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=10&from=${enc(s.next_batch)}`);
      assert.deepEqual(ids(fromSync.chunk), later);
      // Backwards from the end, the same events in reverse.
      const back = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=2&from=${enc(last.end)}`);
      assert.deepEqual(ids(back.chunk), [...later].reverse());
    });

    test('/messages without a from: backwards from the newest event, forwards from the first; dir defaults to forwards', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const sent = [await alice.text(roomId, 'a'), await alice.text(roomId, 'b')];
      const newest = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=1`);
      assert.deepEqual(ids(newest.chunk), sent.slice(1));
      const c = await alice.text(roomId, 'c');
      // Forward from the backward page's start: what came after it.
      const after = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=5&from=${enc(newest.start)}`);
      assert.deepEqual(ids(after.chunk), [c]);
      const all = await wholeRoom(alice, roomId);
      const fromStart = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=f&limit=2`);
      assert.deepEqual(ids(fromStart.chunk), all.slice(0, 2));
      assert.equal(typeof fromStart.end, 'string');
      // As from the reference server: without dir, forwards; from=END is no from.
      assert.deepEqual(ids((await alice.ok('GET', `/rooms/${enc(roomId)}/messages?limit=2`)).chunk), all.slice(0, 2));
      assert.deepEqual(ids((await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=1&from=END`)).chunk), [c]);
      const bad = await alice.call('GET', `/rooms/${enc(roomId)}/messages?dir=up`);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errcode, 'M_INVALID_PARAM');
    });

    test('a filtered page that finds nothing, with the room exhausted, has no end', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      await alice.text(roomId, 'only text');
      const filter = enc(JSON.stringify({ types: ['m.reaction'] }));
      const none = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5&filter=${filter}`);
      assert.deepEqual(none.chunk, []);
      assert.equal(none.end, undefined);
      await alice.send(roomId, { 'm.relates_to': { rel_type: 'm.annotation', event_id: '$x', key: 'y' } }, 'm.reaction');
      const one = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5&filter=${filter}`);
      assert.deepEqual(one.chunk.map((e: any) => e.type), ['m.reaction']);
      assert.equal(typeof one.end, 'string');
      const after = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5&filter=${filter}&from=${enc(one.end)}`);
      assert.deepEqual(after.chunk, []);
      assert.equal(after.end, undefined);
    });

    test('a room newly joined in an incremental sync is limited when a type filter left events out', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      const texts = [await alice.text(roomId, 'one'), await alice.text(roomId, 'two')];
      const b1 = await bob.sync();
      await bob.join(roomId);
      const filter = { room: { timeline: { types: ['m.room.message'], limit: 5 } } };
      const b2 = await bob.sync({ since: b1.next_batch, filter });
      const joined = b2.rooms.join[roomId];
      assert.ok(joined);
      assert.deepEqual(ids(joined.timeline.events), texts);
      assert.equal(joined.timeline.limited, true, 'the room has earlier events bob did not get');
      // Its prev_batch pages back over what the filter left out.
      const earlier = await pageBack(bob, roomId, joined.timeline.prev_batch, 10);
      assert.ok(earlier.length > 0);
      // A limit that cuts the timeline: limited too.
      const b3 = await bob.sync({ since: b1.next_batch, filter: { room: { timeline: { types: ['m.room.message'], limit: 1 } } } });
      assert.deepEqual(ids(b3.rooms.join[roomId].timeline.events), texts.slice(1));
      assert.equal(b3.rooms.join[roomId].timeline.limited, true);
      // Without a type filter as well: a room new to the client is limited, as its history goes on before the timeline.
      const b4 = await bob.sync({ since: b1.next_batch });
      assert.equal(b4.rooms.join[roomId].timeline.limited, true);
      // Once known, an incremental sync with everything since the token is not limited.
      const m = await alice.text(roomId, 'three');
      const b5 = await bob.sync({ since: b2.next_batch, filter });
      assert.deepEqual(ids(timelineOf(b5, roomId)), [m]);
      assert.equal(b5.rooms.join[roomId].timeline.limited, false);
      // An initial sync that reaches the room's first event is not limited.
      const initial = await bob.sync({ filter: { room: { timeline: { limit: 50 } } } });
      assert.equal(initial.rooms.join[roomId].timeline.limited, false);

      // A room joined and left again between two syncs is new to the client too.
      const carol = await user('carol');
      const c1 = await carol.sync();
      await carol.join(roomId);
      await carol.leave(roomId);
      const c2 = await carol.sync({ since: c1.next_batch, filter: { room: { timeline: { limit: 50 } } } });
      const left = c2.rooms.leave[roomId];
      assert.ok(left);
      assert.equal(left.timeline.events.at(-1).content.membership, 'leave');
      assert.equal(left.timeline.limited, true);
    });
  });
}
