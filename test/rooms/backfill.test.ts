// Backfill: history another server returns from before a room's backward extremities. Each event is
// checked as a received one but never soft-failed, stored on a negative position (newer history
// nearer 0), and leaves the forward extremities and the current state as they were; the gap it
// fills closes and the gaps before it open. The other server is a fake remote; the room starts on
// this server, and bob's history reaches it only past a gap.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { stateKey, type Pdu } from '../../src/protocol/events.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { storageBackends } from '../support/databases.js';
import { RemoteServer, RoomGraph, tamper, type GraphEvent } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';
import type { KeyRing } from '../../src/rooms/input/key-ring.js';
import type { RemoteEvents } from '../../src/rooms/input/remote-events.js';
import { rejectsWith, SERVER, useRoomsHarness, user } from './helpers.js';

const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

for (const backend of await storageBackends()) {
  describe(`backfill on ${backend.name}`, { skip: backend.skip }, () => {
    const remote = new RemoteServer({ serverName: 'remote.test' });
    const remoteKeys = keyRingOf(remote);
    // The remote's keys and this server's own (a backfill answer holds this server's events too).
    const keyRing: KeyRing = {
      async verifyKeys(requests) {
        const found = new Map(await remoteKeys.verifyKeys(requests));
        found.set(SERVER, new Map([[h.key.keyId, { publicKey: h.key.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER }]]));
        return found;
      },
    };
    // /state_ids answers can be held back, to receive an event live while a backfill gathers for it.
    const ports = remoteEventsOf(remote);
    let held: { reached: () => void; release: Promise<void> } | undefined;
    const remoteEvents: RemoteEvents = {
      ...ports,
      async stateIdsAt(origin, roomId, eventId) {
        const hold = held;
        held = undefined;
        if (hold !== undefined) {
          hold.reached();
          await hold.release;
        }
        return ports.stateIdsAt(origin, roomId, eventId);
      },
    };
    const h = useRoomsHarness(backend, { defaultRoomVersion: '10', keyRing, remoteEvents });
    const alice = user('alice');

    /**
     * Alice's public room with bob joined from the remote; then bob's `history` (built by `make`
     * on his server) never reaches this one, and `after`, citing its newest event, does: the
     * newest history event is the room's backward extremity.
     */
    async function roomWithGap(
      make: (g: RoomGraph) => GraphEvent[],
      afterContent: (history: GraphEvent[]) => JsonObject = () => ({ msgtype: 'm.text', body: 'after the gap' }),
    ): Promise<{ roomId: string; g: RoomGraph; join: GraphEvent; history: GraphEvent[]; after: GraphEvent }> {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(h.database.db);
      for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      assert.equal((await h.rooms.receive('remote.test', [join.pdu]))[0]!.status, 'timeline');
      const history = make(g);
      const after = g.eventSync({ type: 'm.room.message', sender: BOB, content: afterContent(history) });
      // The newest withheld is enough: /get_missing_events does not walk past it.
      const newest = history[history.length - 1]!.eventId;
      remote.withhold(newest);
      try {
        const [outcome] = await h.rooms.receive('remote.test', [after.pdu]);
        assert.equal(outcome!.status, 'timeline', outcome!.reason);
      } finally {
        remote.release(newest);
      }
      assert.deepEqual(await backward(roomId), [history[history.length - 1]!.eventId]);
      return { roomId, g, join, history, after };
    }

    const messages = (g: RoomGraph, n: number, body = 'history'): GraphEvent[] =>
      Array.from({ length: n }, (_, i) => g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: `${body} ${i + 1}` } }));

    async function backward(roomId: string): Promise<string[]> {
      const { rows } = await sql<{ event_id: string }>`select b.event_id from backward_extremities b join rooms r on r.room_nid = b.room_nid
        where r.room_id = ${roomId} order by b.event_id`.execute(h.database.db);
      return rows.map((r) => r.event_id);
    }

    async function forward(roomId: string): Promise<string[]> {
      const { rows } = await sql<{ event_id: string }>`select e.event_id from forward_extremities x join events e on e.event_nid = x.event_nid
        join rooms r on r.room_nid = x.room_nid where r.room_id = ${roomId} order by e.event_id`.execute(h.database.db);
      return rows.map((r) => r.event_id);
    }

    /** Each stored event's status and position, by id. */
    async function rows(ids: readonly string[]): Promise<Map<string, { status: string; position: number | null }>> {
      const found = await h.database.db.selectFrom('events').select(['event_id', 'status', 'stream_ordering']).where('event_id', 'in', [...ids]).execute();
      return new Map(found.map((r) => [r.event_id, { status: r.status, position: r.stream_ordering === null ? null : Number(r.stream_ordering) }]));
    }

    /** What stays as it was: the forward extremities, the current state and the latest position. */
    async function roomFacts(roomId: string): Promise<{ room: object; state: string[]; forward: string[]; events: number }> {
      const room = await h.database.db.selectFrom('rooms').select(['state_snapshot_nid', 'latest_position', 'joined_members']).where('room_id', '=', roomId).executeTakeFirstOrThrow();
      const state = (await h.rooms.state(alice, roomId)).map((e) => e.event_id).sort();
      return { room, state, forward: await forward(roomId), events: h.notifier.current().events };
    }

    test('history fills the gap: timeline events on negative positions, newest nearest 0; extremities and current state untouched', async () => {
      const { roomId, history, after, join } = await roomWithGap((g) => messages(g, 4));
      const before = await roomFacts(roomId);
      assert.deepEqual(before.forward, [join.eventId, after.eventId].sort());
      const outcomes = await h.rooms.backfillFrom('remote.test', roomId, 50);
      // The remote walks back to the room's start: the events this server had are known already.
      const byId = new Map(outcomes.map((o) => [o.eventId, o.status]));
      for (const e of history) assert.equal(byId.get(e.eventId), 'timeline', JSON.stringify(outcomes));
      assert.equal(byId.get(join.eventId), 'timeline');
      assert.equal(outcomes.filter((o) => o.status === 'dropped').length, 0, JSON.stringify(outcomes));
      const stored = await rows(history.map((e) => e.eventId));
      const positions = history.map((e) => stored.get(e.eventId)!.position!);
      assert.ok(positions.every((p) => p < 0), `negative: ${positions}`);
      assert.deepEqual([...positions].sort((a, b) => a - b), positions, `older history lower: ${positions}`);
      assert.deepEqual(await backward(roomId), []);
      assert.deepEqual(await roomFacts(roomId), before);
      // Served: the newest of the history, as any timeline event.
      assert.equal((await h.rooms.getEvent(alice, roomId, history[3]!.eventId)).event_id, history[3]!.eventId);
    });

    test('a partial backfill leaves the gap before it; the next one goes further back, on lower positions', async () => {
      const { roomId, history } = await roomWithGap((g) => messages(g, 6));
      const ids = history.map((e) => e.eventId);
      remote.requests.length = 0;
      const first = await h.rooms.backfillFrom('remote.test', roomId, 3);
      assert.deepEqual(first.map((o) => o.status), ['timeline', 'timeline', 'timeline'], JSON.stringify(first));
      assert.deepEqual(remote.requests.find((r) => r.method === 'backfill')?.args, [roomId, [ids[5]], 3]);
      // The oldest one's prev event is missing: its state came from the origin, and it is the gap now.
      assert.deepEqual(remote.requests.filter((r) => r.method === 'stateIdsAt').map((r) => r.args[0]), [ids[3]]);
      assert.deepEqual(await backward(roomId), [ids[2]]);
      assert.equal((await rows([ids[2]!])).size, 0);
      const second = await h.rooms.backfillFrom('remote.test', roomId, 3);
      assert.deepEqual(second.map((o) => o.status), ['timeline', 'timeline', 'timeline'], JSON.stringify(second));
      assert.deepEqual(await backward(roomId), []);
      const stored = await rows(ids);
      const positions = ids.map((id) => stored.get(id)!.position!);
      assert.deepEqual([...positions].sort((a, b) => a - b), positions, `older history lower: ${positions}`);
      assert.ok(positions[5]! < 0);
      // Nothing left to fill: the remote is not asked.
      remote.requests.length = 0;
      assert.deepEqual(await h.rooms.backfillFrom('remote.test', roomId, 3), []);
      assert.deepEqual(remote.requests, []);
    });

    test('history is not judged by the current state: a banned sender’s old message is accepted, not soft-failed', async () => {
      const { roomId, history } = await roomWithGap((g) => messages(g, 1, 'before the ban'));
      await h.rooms.ban(alice, roomId, BOB);
      const facts = await roomFacts(roomId);
      const [outcome] = await h.rooms.backfill('remote.test', roomId, [history[0]!.pdu]);
      assert.equal(outcome!.status, 'timeline', outcome!.reason);
      assert.equal((await rows([history[0]!.eventId])).get(history[0]!.eventId)!.status, 'timeline');
      assert.deepEqual(await roomFacts(roomId), facts);
      assert.deepEqual(await backward(roomId), []);
    });

    test('backfilled events failing auth are stored rejected and never served; a bad signature is dropped; the gap stays until filled', async () => {
      const carol = '@carol:remote.test';
      const text = (body: string) => ({ msgtype: 'm.text', body });
      let e: Record<'h1' | 'leave' | 'stale' | 'rejoin' | 'wrongAuth' | 'stranger' | 'h3', GraphEvent> | undefined;
      const { roomId } = await roomWithGap((g) => {
        const joined = g.stateAfter(g.extremities()[0]!);
        const h1 = g.eventSync({ type: 'm.room.message', sender: BOB, content: text('one') });
        const leave = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'leave' } });
        // Allowed by its auth events (bob's old join), not by the state before it (he left): check 5.
        const auth = [stateKey('m.room.create', ''), stateKey('m.room.power_levels', ''), stateKey('m.room.member', BOB)].map((k) => joined.get(k)!);
        const stale = g.eventSync({ type: 'm.room.message', sender: BOB, content: text('after leaving'), auth });
        const rejoin = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
        // Allowed by the state before it, not by its auth events (no membership of bob's): check 4.
        const wrongAuth = g.eventSync({ type: 'm.room.message', sender: BOB, content: text('no membership cited'), auth: auth.slice(0, 2) });
        // Carol never joined: denied by both.
        const stranger = g.eventSync({ type: 'm.room.message', sender: carol, content: text('let me in') });
        const h3 = g.eventSync({ type: 'm.room.message', sender: BOB, content: text('three') });
        e = { h1, leave, stale, rejoin, wrongAuth, stranger, h3 };
        return Object.values(e);
      });
      const { h1, leave, stale, rejoin, wrongAuth, stranger, h3 } = e!;
      const forged = tamper.signature(h3.pdu, VERSION, 'remote.test');
      const answer = [forged, stranger.pdu, wrongAuth.pdu, rejoin.pdu, stale.pdu, leave.pdu, h1.pdu];
      const outcomes = await h.rooms.backfill('remote.test', roomId, answer);
      assert.deepEqual(outcomes.map((o) => o.status), ['dropped', 'rejected', 'rejected', 'timeline', 'rejected', 'timeline', 'timeline'], JSON.stringify(outcomes));
      assert.match(outcomes[0]!.reason!, /signatures/);
      const stored = await rows([h1, leave, stale, rejoin, wrongAuth, stranger, h3].map((x) => x.eventId));
      for (const x of [stale, wrongAuth, stranger]) {
        assert.deepEqual(stored.get(x.eventId), { status: 'rejected', position: null });
        await rejectsWith(h.rooms.getEvent(alice, roomId, x.eventId), 404, 'M_NOT_FOUND');
      }
      assert.equal(stored.has(h3.eventId), false);
      const page = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 50 });
      assert.deepEqual(page.chunk.slice(-3).map((x) => x.event_id), [rejoin.eventId, leave.eventId, h1.eventId]);
      assert.deepEqual(await backward(roomId), [h3.eventId]);
      // Filled by an honest copy: its prev event is a rejected one, so its state is the origin's.
      remote.requests.length = 0;
      const [filled] = await h.rooms.backfillFrom('remote.test', roomId, 1);
      assert.equal(filled!.status, 'timeline', filled!.reason);
      assert.deepEqual(remote.requests.filter((r) => r.method === 'stateIdsAt').map((r) => r.args[0]), [h3.eventId]);
      assert.deepEqual(await backward(roomId), []);
    });

    test('backfilling the same history twice (or one event twice in an answer) is harmless', async () => {
      const { roomId, history } = await roomWithGap((g) => messages(g, 3));
      const pdus = history.map((e) => e.pdu).reverse();
      const first = await h.rooms.backfill('remote.test', roomId, [...pdus, pdus[0]!]);
      assert.deepEqual(first.map((o) => o.status), ['timeline', 'timeline', 'timeline', 'timeline'], JSON.stringify(first));
      const ids = history.map((e) => e.eventId);
      const once = await rows(ids);
      const facts = await roomFacts(roomId);
      const again = await h.rooms.backfill('remote.test', roomId, pdus);
      assert.deepEqual(again.map((o) => o.status), ['timeline', 'timeline', 'timeline']);
      assert.deepEqual(await rows(ids), once);
      const { rows: counts } = await sql<{ n: number | string }>`select count(*) as n from events where event_id in (${sql.join(ids)})`.execute(h.database.db);
      assert.equal(Number(counts[0]!.n), 3);
      assert.deepEqual(await roomFacts(roomId), facts);
      assert.deepEqual(await backward(roomId), []);
      const page = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 50 });
      assert.deepEqual(page.chunk.slice(-3).map((e) => e.event_id), [...ids].reverse());
    });

    test('two backfills of one gap at once store each event once', async () => {
      const { roomId, history } = await roomWithGap((g) => messages(g, 4));
      const ids = history.map((e) => e.eventId);
      const pdus = history.map((e) => e.pdu).reverse();
      const [a, b] = await Promise.all([h.rooms.backfill('remote.test', roomId, pdus), h.rooms.backfill('remote.test', roomId, pdus)]);
      for (const outcomes of [a!, b!]) assert.deepEqual(outcomes.map((o) => o.status), ['timeline', 'timeline', 'timeline', 'timeline'], JSON.stringify(outcomes));
      const stored = await rows(ids);
      const positions = ids.map((id) => stored.get(id)!.position!);
      assert.deepEqual([...positions].sort((x, y) => x - y), positions, `older history lower: ${positions}`);
      assert.deepEqual(await backward(roomId), []);
      // The room's head lived through it: a send builds on it.
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'still fine' });

      // Asked of the remote twice at once: the second finds the gap filled.
      const other = await roomWithGap((g) => messages(g, 4));
      remote.requests.length = 0;
      const [first, second] = await Promise.all([h.rooms.backfillFrom('remote.test', other.roomId, 4), h.rooms.backfillFrom('remote.test', other.roomId, 4)]);
      assert.deepEqual(first!.map((o) => o.status), ['timeline', 'timeline', 'timeline', 'timeline'], JSON.stringify(first));
      assert.deepEqual(second, []);
      assert.equal(remote.requests.filter((r) => r.method === 'backfill').length, 1);
      const positionsOther = await rows(other.history.map((e) => e.eventId));
      const ordered = other.history.map((e) => positionsOther.get(e.eventId)!.position!);
      assert.deepEqual([...ordered].sort((x, y) => x - y), ordered, `older history lower: ${ordered}`);
    });

    test('an event received live while a backfill gathers for it is decided once', async () => {
      const { roomId, history } = await roomWithGap((g) => messages(g, 3));
      const newest = history[2]!;
      let reached!: () => void;
      const gathering = new Promise<void>((resolve) => (reached = resolve));
      let release!: () => void;
      held = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
      // The newest history event's prev is missing: the backfill asks for the state before it.
      const backfilled = h.rooms.backfillFrom('remote.test', roomId, 1);
      await gathering;
      // Meanwhile it arrives live (its prev events fetched with it): on the stream.
      const [live] = await h.rooms.receive('remote.test', [newest.pdu]);
      assert.equal(live!.status, 'timeline', live!.reason);
      release();
      const outcomes = await backfilled;
      assert.deepEqual(outcomes, [{ eventId: newest.eventId, status: 'timeline' }]);
      const stored = await rows(history.map((e) => e.eventId));
      assert.ok(stored.get(newest.eventId)!.position! > 0, 'as received live');
      // The head lived through it.
      const sent = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'still fine' });
      assert.ok((await h.rooms.reader.event(sent))!.pdu.prev_events.length > 0);
      assert.deepEqual(await backward(roomId), []);
    });

    test('a redaction in history takes effect on its target, backfilled with it', async () => {
      let target: GraphEvent | undefined;
      const { roomId, history } = await roomWithGap((g) => {
        target = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'regret' } });
        return [target, g.eventSync({ type: 'm.room.redaction', sender: BOB, content: {}, redacts: target.eventId })];
      });
      const outcomes = await h.rooms.backfillFrom('remote.test', roomId, 2);
      assert.deepEqual(outcomes.map((o) => o.status), ['timeline', 'timeline'], JSON.stringify(outcomes));
      const served = await h.rooms.getEvent(alice, roomId, target!.eventId);
      assert.deepEqual(served.content, {});
      assert.equal((served.unsigned as { redacted_because?: { event_id: string } }).redacted_because?.event_id, history[1]!.eventId);
    });

    test('an event known as an outlier (part of the state at the gap) is backfilled in full', async () => {
      let rename: GraphEvent | undefined;
      const { roomId, history } = await roomWithGap((g) => {
        rename = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join', displayname: 'Bob' } });
        return [rename, ...messages(g, 1)];
      });
      // The state before `after` held bob's new member event: fetched as an outlier.
      assert.deepEqual((await rows([rename!.eventId])).get(rename!.eventId), { status: 'outlier', position: null });
      // The newest first: its prev event is that outlier, known without its state, so a gap.
      const first = await h.rooms.backfillFrom('remote.test', roomId, 1);
      assert.deepEqual(first.map((o) => o.status), ['timeline'], JSON.stringify(first));
      assert.deepEqual(await backward(roomId), [rename!.eventId]);
      const outcomes = await h.rooms.backfillFrom('remote.test', roomId, 2);
      assert.deepEqual(outcomes.map((o) => o.status), ['timeline', 'timeline'], JSON.stringify(outcomes));
      const stored = await rows(history.map((e) => e.eventId));
      assert.equal(stored.get(rename!.eventId)!.status, 'timeline');
      assert.ok(stored.get(rename!.eventId)!.position! < stored.get(history[1]!.eventId)!.position!);
      const served = await h.rooms.getEvent(alice, roomId, rename!.eventId);
      assert.equal((served.content as { displayname?: string }).displayname, 'Bob');
      assert.deepEqual(await backward(roomId), []);
    });
    test('history fetched after a reply in its thread: the root is served with the thread', async () => {
      const { roomId, history, after } = await roomWithGap(
        (g) => messages(g, 1, 'the root'),
        (history) => ({ msgtype: 'm.text', body: 'in the thread', 'm.relates_to': { rel_type: 'm.thread', event_id: history[0]!.eventId } }),
      );
      await h.rooms.backfillFrom('remote.test', roomId, 50);
      const root = await h.rooms.getEvent(alice, roomId, history[0]!.eventId);
      const thread = (root.unsigned['m.relations'] as { 'm.thread': { count: number; latest_event: { event_id: string } } })['m.thread'];
      assert.deepEqual([thread.count, thread.latest_event.event_id], [1, after.eventId]);
    });
  });
}
