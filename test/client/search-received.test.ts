// POST /search over messages another server sent, on both backends: the other server is a fake
// remote with its own key (test/support/remote-server.ts), its events received through the
// inbound pipeline. An edit may arrive before the message it edits (they need not cite each
// other); the message must still be found by the edit's text and not by its old one. History
// fetched later (backfilled, on negative positions) is found too, and a search right after the
// backfill sees it.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Pdu } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { ApiClient } from '../e2e/support/client.js';
import { RemoteServer, RoomGraph } from '../support/remote-server.js';
import { remoteEventsOf } from '../support/remote-ports.js';
import { serverBackends, useTestServer } from '../support/server.js';

const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

for (const { backend, skip } of await serverBackends()) {
  describe(`search over received events on ${backend}`, { skip }, () => {
    const remote = new RemoteServer({ serverName: 'remote.test' });
    const hs = useTestServer({ backend, remoteEvents: remoteEventsOf(remote) });

    const found = async (alice: ApiClient, term: string): Promise<{ ids: string[]; bodies: string[]; edits: unknown[] }> => {
      const r = (await alice.ok('POST', '/search', { search_categories: { room_events: { search_term: term } } })).search_categories.room_events;
      return {
        ids: r.results.map((x: any) => x.result.event_id),
        bodies: r.results.map((x: any) => x.result.content.body),
        edits: r.results.map((x: any) => x.result.unsigned?.['m.relations']?.['m.replace']?.event_id),
      };
    };

    let n = 0;
    /** A public room of a new local user's, with bob of the remote joined; the remote's graph of it. */
    async function roomWithBob() {
      const { rooms, keyRing } = hs.server.services;
      keyRing.add('remote.test', remote.signingKey.keyId, { publicKey: remote.signingKey.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
      const u = await hs.registerUser(`alice${++n}`, 'secret-password');
      const alice = new ApiClient(hs.baseUrl, '/_chat/client/v3', u.userId, u.accessToken, u.deviceId);
      const { roomId } = await rooms.createRoom({ userId: u.userId, deviceId: u.deviceId }, { preset: 'public_chat' });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(hs.server.core.db);
      for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      const receive = async (pdu: Pdu) => (await rooms.receive('remote.test', [pdu]))[0]!.status;
      assert.equal(await receive(join.pdu), 'timeline');
      return { rooms, alice, roomId, g, join, receive };
    }

    test('an edit received before its message: the message is found by the edit, not by its old text', async () => {
      const { alice, g, join, receive } = await roomWithBob();

      // Both cite bob's join: neither is the other's prev event, so either may come first.
      const original = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'the narwhal is grey' }, prev: [join.eventId] });
      const edit = g.eventSync({
        type: 'm.room.message',
        sender: BOB,
        content: { msgtype: 'm.text', body: '* the narwhal is pink', 'm.new_content': { msgtype: 'm.text', body: 'the narwhal is pink' }, 'm.relates_to': { rel_type: 'm.replace', event_id: original.eventId } },
        prev: [join.eventId],
      });
      assert.equal(await receive(edit.pdu), 'timeline');
      assert.deepEqual((await found(alice, 'narwhal')).ids, [], 'the edit alone is no result');
      assert.equal(await receive(original.pdu), 'timeline');

      const pink = await found(alice, 'pink');
      assert.deepEqual(pink.ids, [original.eventId], 'the message, by its edit');
      assert.deepEqual(pink.edits, [edit.eventId], 'served with its edit');
      assert.deepEqual((await found(alice, 'grey')).ids, [], 'not by its old text');
      assert.deepEqual((await found(alice, 'narwhal')).ids, [original.eventId], 'one result for the message');
    });

    test('backfilled history is found, by a search right after the backfill; an edit of it counts', async () => {
      const { rooms, alice, roomId, g, receive } = await roomWithBob();
      // Bob's messages reach this server only past a gap: the newest is withheld, so the one after
      // it is stored with a backward extremity, and the rest come by backfill.
      const history = ['zoo: the axolotl smiles', 'zoo: the okapi hides', 'zoo: the quokka waves'].map((body) => g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body } }));
      const after = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'zoo: after the gap' } });
      const newest = history[2]!.eventId;
      remote.withhold(newest);
      try {
        assert.equal(await receive(after.pdu), 'timeline');
      } finally {
        remote.release(newest);
      }
      // The okapi's edit comes live, before its message is backfilled.
      const edit = g.eventSync({
        type: 'm.room.message',
        sender: BOB,
        content: { msgtype: 'm.text', body: '* zoo: the okapi dances', 'm.new_content': { msgtype: 'm.text', body: 'zoo: the okapi dances' }, 'm.relates_to': { rel_type: 'm.replace', event_id: history[1]!.eventId } },
      });
      assert.equal(await receive(edit.pdu), 'timeline');
      assert.deepEqual((await found(alice, 'axolotl')).ids, [], 'not fetched yet');

      await rooms.backfillFrom('remote.test', roomId, 50);
      const positions = await sql<{ event_id: string; stream_ordering: number }>`select event_id, stream_ordering from events where event_id in (${sql.join(history.map((e) => e.eventId))})`.execute(hs.server.core.db);
      assert.equal(positions.rows.length, 3);
      assert.ok(positions.rows.every((r) => Number(r.stream_ordering) < 0), 'backfilled, on negative positions');
      assert.deepEqual((await found(alice, 'axolotl')).ids, [history[0]!.eventId]);
      assert.deepEqual((await found(alice, 'quokka')).ids, [history[2]!.eventId]);
      assert.deepEqual((await found(alice, 'dances')).ids, [history[1]!.eventId], 'by its edit');
      assert.deepEqual((await found(alice, 'hides')).ids, [], 'not by its old text');
      // Newest first when asked for recent ones: a message by its version's position (the okapi's
      // is its live edit's), the backfilled after the live, newest first.
      const recent = (await alice.ok('POST', '/search', { search_categories: { room_events: { search_term: 'zoo', order_by: 'recent' } } })).search_categories.room_events;
      const order = recent.results.map((x: any) => x.result.event_id);
      assert.deepEqual(order, [history[1]!.eventId, after.eventId, history[2]!.eventId, history[0]!.eventId]);
    });
  });
}
