// Backfilled history as clients see it over HTTP, on SQLite and PostgreSQL: never new to a sync
// (neither an incremental one from before the backfill nor the newest events of an initial one),
// and found by /messages past the live events, backwards from the live end (older last) and
// forwards from the start (before the live events).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Pdu } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { RemoteServer, RoomGraph, type GraphEvent } from '../support/remote-server.js';
import { remoteEventsOf } from '../support/remote-ports.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, timelineOf, type Client } from './sync-client.js';

const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

const ids = (events: readonly any[]): string[] => events.map((e) => e.event_id as string);

/** Pages /messages from `from` (the live end or the start when absent) until no `end`; every event in order. */
async function pageAll(c: Client, roomId: string, dir: 'b' | 'f', limit: number, from?: string): Promise<string[]> {
  const out: string[] = [];
  let token = from;
  for (let guard = 0; guard < 100; guard++) {
    const query = `dir=${dir}&limit=${limit}${token !== undefined ? `&from=${enc(token)}` : ''}`;
    const page = await c.ok('GET', `/rooms/${enc(roomId)}/messages?${query}`);
    out.push(...ids(page.chunk));
    if (page.end === undefined || page.chunk.length === 0) return out;
    token = page.end;
  }
  throw new Error('paging did not end');
}

for (const { backend, skip } of await serverBackends()) {
  describe(`backfilled history over HTTP on ${backend}`, { skip }, () => {
    const remote = new RemoteServer({ serverName: 'remote.test' });
    const hs = useTestServer({ backend, remoteEvents: remoteEventsOf(remote) });
    const user = clients(hs);

    /**
     * Alice's room with bob joined from the remote; bob's five messages of `history` reach this
     * server only past a gap (the newest is the backward extremity), then `after`, then alice's
     * three `live` messages. Returns the room's live events oldest first.
     */
    async function setup() {
      const { rooms, keyRing } = hs.server.services;
      keyRing.add('remote.test', remote.signingKey.keyId, { publicKey: remote.signingKey.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
      const alice = await user('alice');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(hs.server.core.db);
      for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      assert.equal((await rooms.receive('remote.test', [join.pdu]))[0]!.status, 'timeline');
      const history: GraphEvent[] = [];
      for (let i = 1; i <= 5; i++) history.push(g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: `history ${i}` } }));
      const after = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'after the gap' } });
      const newest = history[4]!.eventId;
      remote.withhold(newest);
      try {
        const [outcome] = await rooms.receive('remote.test', [after.pdu]);
        assert.equal(outcome!.status, 'timeline', outcome!.reason);
      } finally {
        remote.release(newest);
      }
      for (let i = 1; i <= 3; i++) await alice.text(roomId, `live ${i}`);
      const live = await sql<{ event_id: string }>`select e.event_id from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering > 0 order by e.stream_ordering`.execute(hs.server.core.db);
      return { rooms, alice, roomId, history: history.map((e) => e.eventId), live: live.rows.map((r) => r.event_id) };
    }

    test('a sync never shows backfilled events as new: not to an incremental sync from before, not among the newest of an initial one', async () => {
      const { rooms, alice, roomId, history, live } = await setup();
      const before = await alice.sync({ timeout: 0 });
      assert.deepEqual(ids(timelineOf(before, roomId)).slice(-1), live.slice(-1));
      const outcomes = await rooms.backfillFrom('remote.test', roomId, 50);
      for (const id of history) assert.equal(outcomes.find((o) => o.eventId === id)?.status, 'timeline', JSON.stringify(outcomes));

      const incremental = await alice.sync({ since: before.next_batch, timeout: 0 });
      assert.equal(incremental.rooms?.join?.[roomId], undefined, `nothing new in the room: ${JSON.stringify(incremental.rooms?.join?.[roomId])}`);
      assert.equal(incremental.next_batch, before.next_batch);

      const initial = await alice.sync({ timeout: 0, filter: { room: { timeline: { limit: 3 } } } });
      const timeline = initial.rooms.join[roomId].timeline;
      assert.deepEqual(ids(timeline.events), live.slice(-3));
      assert.equal(timeline.limited, true);
      // Paging back from it: the rest of the live events, then the history, newest first.
      const earlier = await pageAll(alice, roomId, 'b', 4, timeline.prev_batch);
      assert.deepEqual(earlier, [...live.slice(0, -3).reverse(), ...[...history].reverse()]);
    });

    test('/messages: backwards from the live end reaches the backfilled events after the live ones, older last; forwards from the start gives them first', async () => {
      const { rooms, alice, roomId, history, live } = await setup();
      // Filled in two steps: the second goes further back, on lower positions.
      await rooms.backfillFrom('remote.test', roomId, 2);
      await rooms.backfillFrom('remote.test', roomId, 50);
      const backwards = await pageAll(alice, roomId, 'b', 4);
      assert.deepEqual(backwards, [...[...live].reverse(), ...[...history].reverse()]);
      const forwards = await pageAll(alice, roomId, 'f', 4);
      assert.deepEqual(forwards, [...history, ...live]);
      // A token inside the history (negative) pages on from there.
      const page = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=${live.length + 2}`);
      assert.deepEqual(ids(page.chunk).slice(-2), [history[4], history[3]]);
      assert.match(page.end, /^t-\d+$/);
      assert.deepEqual(await pageAll(alice, roomId, 'b', 2, page.end), [history[2], history[1], history[0]]);
      assert.deepEqual(await pageAll(alice, roomId, 'f', 2, page.end), [history[3], history[4], ...live]);
    });
  });
}
