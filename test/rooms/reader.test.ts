import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey } from '../../src/protocol/events.js';
import { loadVisibilityHistory, visibleEvents } from '../../src/rooms/query/history.js';
import { RoomReader } from '../../src/rooms/reader.js';
import { decodeTimelineToken, encodeTimelineToken } from '../../src/rooms/tokens.js';
import { eventsInStreamRange } from '../../src/storage/sync/events.js';
import { storageBackends } from '../support/databases.js';
import { user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');

for (const backend of await storageBackends()) {
  describe(`the reader sync builds on, on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    const lastPosition = async (roomId: string) => {
      const info = (await h.rooms.reader.roomInfo(roomId))!;
      return (await h.rooms.reader.roomEvents(info.nid, {}, 'desc', 1))[0]!.streamOrdering!;
    };

    test('events of several rooms in (after, upTo], rooms with news, and membership changes of a user', async () => {
      const a = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const b = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const quiet = await h.rooms.createRoom(alice, {});
      const since = Math.max(await lastPosition(a.roomId), await lastPosition(b.roomId), await lastPosition(quiet.roomId));
      await h.rooms.join(bob, a.roomId);
      const m1 = await h.rooms.sendMessage(alice, a.roomId, 'm.room.message', { body: 'a1' });
      const m2 = await h.rooms.sendMessage(alice, b.roomId, 'm.room.message', { body: 'b1' });
      const upTo = await lastPosition(b.roomId);
      await h.rooms.sendMessage(alice, a.roomId, 'm.room.message', { body: 'later' });
      const nids = await Promise.all([a, b, quiet].map(async (r) => (await h.rooms.reader.roomInfo(r.roomId))!.nid));
      const events = await h.rooms.reader.eventsOfRooms(nids, { after: since, upTo }, 'asc', 100);
      assert.deepEqual(events.map((e) => e.type), ['m.room.member', 'm.room.message', 'm.room.message']);
      assert.deepEqual(events.slice(1).map((e) => e.eventId), [m1, m2]);
      const news = await h.rooms.reader.roomsWithEvents(nids, { after: since, upTo });
      assert.deepEqual([...news.keys()].sort(), [nids[0], nids[1]].sort());
      assert.equal(news.get(nids[1]!), upTo);
      const changes = await h.rooms.reader.membershipChanges(bob.userId, { after: since });
      assert.deepEqual(changes.map((e) => [e.roomId, e.pdu.content.membership]), [[a.roomId, 'join']]);
      const rooms = await h.rooms.reader.roomsOfUser(bob.userId, ['join']);
      assert.deepEqual(rooms.map((r) => r.room_id), [a.roomId]);
    });

    test('what was just committed is answered from memory as the database answers it', async () => {
      const a = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const b = await h.rooms.createRoom(alice, {});
      const start = await lastPosition(b.roomId);
      await h.rooms.join(bob, a.roomId);
      // Concurrent sends share a transaction: one batch, several rooms.
      const sent = await Promise.all([
        h.rooms.sendMessage(alice, a.roomId, 'm.room.message', { body: 'a1' }),
        h.rooms.sendMessage(bob, a.roomId, 'm.room.message', { body: 'a2' }),
        h.rooms.sendState(alice, b.roomId, 'm.room.topic', '', { topic: 'b' }),
        h.rooms.sendMessage(alice, b.roomId, 'm.room.message', { body: 'b1' }),
      ]);
      const redaction = await h.rooms.redact(alice, a.roomId, sent[0]!, { reason: 'oops' });
      const end = await lastPosition(a.roomId);
      const reader = h.rooms.reader;
      for (let after = start; after < end; after++) {
        for (const upTo of [after + 1, Math.floor((after + end) / 2), end]) {
          if (upTo <= after) continue;
          assert.deepEqual(reader.recentStream(after, upTo, 100), await eventsInStreamRange(reader.db, after, upTo, 100), `(${after}, ${upTo}]`);
        }
      }
      assert.equal(reader.recentStream(start, end, 2)!.length, 2);

      // The events as kept from their commit, against a reader that has only the database.
      const fromRows = new RoomReader(reader.db, end);
      const ids = [...sent.slice(1), redaction];
      const nids = (await fromRows.events(ids)).values();
      const kept = await reader.eventsByNids([...nids].map((e) => e.nid));
      // Whether an event was decided on the then current state is known only in memory.
      for (const e of (await fromRows.events(ids)).values()) {
        const { onCurrentState: _known, ...memory } = kept.get(e.nid)!;
        assert.deepEqual(memory, e, e.eventId);
      }
      // The redacted event is read again: its row now names its redaction.
      const redacted = (await reader.event(sent[0]!))!;
      assert.equal(redacted.redactedBy, redaction);

      // A reader started at `end` knows nothing before it.
      assert.equal(fromRows.recentStream(end - 1, end, 100), undefined);
      assert.deepEqual(fromRows.recentStream(end, end, 100), []);
    });

    test("a stream consumer's read leaves the event cache as it was", async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: `m${i}` }));
      // From memory (just committed) and from the database (a reader that has only the database).
      const fromRows = new RoomReader(h.rooms.reader.db, 0);
      const byId = await fromRows.events(ids);
      const nids = ids.map((id) => byId.get(id)!.nid);
      for (const reader of [h.rooms.reader, new RoomReader(h.rooms.reader.db, 0)]) {
        const before = reader.cacheUsage;
        const got = await reader.streamedEvents([...nids, 999_999_999]);
        assert.deepEqual(nids.map((nid) => got.get(nid)?.pdu.content.body), ['m0', 'm1', 'm2']);
        assert.equal(got.size, 3);
        assert.deepEqual(reader.cacheUsage, before);
      }
      // What the cache holds is answered from it.
      const cached = (await h.rooms.reader.eventsByNids([nids[0]!])).get(nids[0]!);
      assert.equal((await h.rooms.reader.streamedEvents([nids[0]!])).get(nids[0]!), cached);
    });

    test('state at a stream position; client format without room_id', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'one' });
      const at = await lastPosition(roomId);
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'two' });
      const nid = (await h.rooms.reader.roomInfo(roomId))!.nid;
      const then = await h.rooms.reader.stateAt(nid, at);
      assert.equal(then.get(stateKey('m.room.topic', ''))!.pdu.content.topic, 'one');
      const now = await h.rooms.reader.stateAt(nid, Number.MAX_SAFE_INTEGER);
      assert.equal(now.get(stateKey('m.room.topic', ''))!.pdu.content.topic, 'two');
      assert.equal((await h.rooms.reader.stateAt(nid, 0)).size, 0);
      const [client] = await h.rooms.reader.clientEvents([then.get(stateKey('m.room.topic', ''))!], { now: Date.now(), omitRoomId: true });
      assert.equal(client!.room_id, undefined);
      assert.deepEqual(client!.content, { topic: 'one' });
    });

    test('history visibility helpers and timeline tokens', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: 'joined' } }],
      });
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'hidden from bob' });
      await h.rooms.join(bob, roomId);
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'seen by bob' });
      const nid = (await h.rooms.reader.roomInfo(roomId))!.nid;
      const all = await h.rooms.reader.roomEvents(nid, {}, 'asc', 100);
      const history = await loadVisibilityHistory(h.database.db, nid, bob.userId);
      const bodies = visibleEvents(history, all, bob.userId).filter((e) => e.type === 'm.room.message').map((e) => e.pdu.content.body);
      assert.deepEqual(bodies, ['seen by bob']);
      assert.equal(decodeTimelineToken(encodeTimelineToken(42)), 42);
      // Backfilled events have negative positions.
      assert.equal(decodeTimelineToken(encodeTimelineToken(-7)), -7);
      assert.throws(() => decodeTimelineToken('t--7'), /Invalid pagination token/);
    });
  });
}
