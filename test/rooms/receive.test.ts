// Receiving events another server built and signed: each check on receipt allowed and denied,
// forks and their merge, missing events fetched, gaps, and a redaction that arrives before its
// target. The other server is a fake remote with its own signing key; the room starts on this
// server and is mirrored into the remote's graph so that its events can cite ours.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Pdu } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { storageBackends } from '../support/databases.js';
import { RemoteServer, RoomGraph, tamper, type GraphEvent } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';
import { rejectsWith, useRoomsHarness, user } from './helpers.js';

const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

for (const backend of await storageBackends()) {
  describe(`receiving events on ${backend.name}`, { skip: backend.skip }, () => {
    const remote = new RemoteServer({ serverName: 'remote.test' });
    const h = useRoomsHarness(backend, { defaultRoomVersion: '10', keyRing: keyRingOf(remote), remoteEvents: remoteEventsOf(remote) });
    const alice = user('alice');

    /** A new public room of alice's, with bob joined from the remote; the remote's graph of it. */
    async function roomWithBob(): Promise<{ roomId: string; g: RoomGraph; join: GraphEvent }> {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      await mirror(roomId, g);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      const [outcome] = await h.rooms.receive('remote.test', [join.pdu]);
      assert.equal(outcome!.status, 'timeline', outcome!.reason);
      return { roomId, g, join };
    }

    /** Adds this server's events of the room the graph does not have yet, in stream order. */
    async function mirror(roomId: string, g: RoomGraph): Promise<void> {
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(h.database.db);
      for (const r of rows) {
        const pdu = JSON.parse(r.json) as Pdu;
        if (pdu.sender.endsWith(':hs.test') && !g.events().some((e) => JSON.stringify(e.pdu) === r.json)) await g.insert(pdu);
      }
    }

    async function statusOf(eventId: string): Promise<string | undefined> {
      const row = await h.database.db.selectFrom('events').select('status').where('event_id', '=', eventId).executeTakeFirst();
      return row?.status;
    }

    async function extremities(roomId: string): Promise<string[]> {
      const { rows } = await sql<{ event_id: string }>`select e.event_id from forward_extremities x join events e on e.event_nid = x.event_nid
        join rooms r on r.room_nid = x.room_nid where r.room_id = ${roomId} order by e.event_id`.execute(h.database.db);
      return rows.map((r) => r.event_id);
    }

    async function timelineIds(roomId: string): Promise<string[]> {
      const page = await h.rooms.messages(alice, roomId, { dir: 'b', limit: 50 });
      return page.chunk.map((e) => e.event_id as string);
    }

    test('a remote join citing the room tip is accepted: current state, timeline, the only extremity', async () => {
      const { roomId, join } = await roomWithBob();
      assert.equal(await statusOf(join.eventId), 'timeline');
      assert.deepEqual(Object.keys(await h.rooms.joinedMembers(alice, roomId)).sort(), [BOB, alice.userId].sort());
      assert.deepEqual(await extremities(roomId), [join.eventId]);
      assert.equal((await timelineIds(roomId))[0], join.eventId);
      // The next local event cites it.
      const sent = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'hi bob' });
      const stored = await h.rooms.reader.event(sent);
      assert.deepEqual(stored!.pdu.prev_events, [join.eventId]);
      // Both events' references are rows, what auth-chain walks and extremity checks read: auth
      // references for the state event only (a message is on no auth chain).
      for (const e of [{ nid: (await h.rooms.reader.event(join.eventId))!.nid, pdu: join.pdu }, { nid: stored!.nid, pdu: stored!.pdu }]) {
        const auth = await h.database.db.selectFrom('event_auth').select('auth_event_id').where('event_nid', '=', e.nid).execute();
        assert.deepEqual(auth.map((r) => r.auth_event_id).sort(), e.pdu.state_key === undefined ? [] : [...(e.pdu.auth_events as string[])].sort());
        const edges = await h.database.db.selectFrom('event_edges').select('prev_event_id').where('event_nid', '=', e.nid).execute();
        assert.deepEqual(edges.map((r) => r.prev_event_id), e.pdu.prev_events);
      }
      const servers = await h.database.db.selectFrom('room_joined_servers as s').innerJoin('rooms as r', 'r.room_nid', 's.room_nid')
        .select(['s.server_name', 's.joined_members']).where('r.room_id', '=', roomId).orderBy('s.server_name').execute();
      assert.deepEqual(servers, [{ server_name: 'hs.test', joined_members: 1 }, { server_name: 'remote.test', joined_members: 1 }]);
    });

    test('dropped: a bad signature, a room this server does not have', async () => {
      const { roomId, g } = await roomWithBob();
      const msg = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'forged' } });
      const forged = tamper.signature(msg.pdu, VERSION, 'remote.test');
      const elsewhere = { ...msg.pdu, room_id: '!nowhere:remote.test' };
      const outcomes = await h.rooms.receive('remote.test', [forged, elsewhere]);
      assert.deepEqual(outcomes.map((o) => o.status), ['dropped', 'dropped']);
      assert.match(outcomes[1]!.reason!, /unknown room/);
      assert.equal(await statusOf(msg.eventId), undefined);
      assert.ok(!(await timelineIds(roomId)).includes(msg.eventId));
    });

    test('rejected by its own auth events: a message from a user who never joined; stored, never served', async () => {
      const { roomId, g, join } = await roomWithBob();
      const carol = '@carol:remote.test';
      const msg = g.eventSync({ type: 'm.room.message', sender: carol, content: { msgtype: 'm.text', body: 'let me in' } });
      const [outcome] = await h.rooms.receive('remote.test', [msg.pdu]);
      assert.equal(outcome!.status, 'rejected');
      assert.equal(await statusOf(msg.eventId), 'rejected');
      await rejectsWith(h.rooms.getEvent(alice, roomId, msg.eventId), 404, 'M_NOT_FOUND');
      assert.deepEqual(await extremities(roomId), [join.eventId]);
      // Received again: known, not decided twice.
      const [again] = await h.rooms.receive('remote.test', [msg.pdu]);
      assert.equal(again!.status, 'rejected');
    });

    test('rejected by the state before it: a join citing auth events of a state it does not have', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      await mirror(roomId, g);
      // The join rule is invite: bob may not join (denied by its auth events already).
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      const [outcome] = await h.rooms.receive('remote.test', [join.pdu]);
      assert.equal(outcome!.status, 'rejected');
      assert.ok(!Object.keys(await h.rooms.joinedMembers(alice, roomId)).includes(BOB));
    });

    test('soft-failed: allowed by the state before it, not by the current state; stored, not served, not an extremity', async () => {
      const { roomId, g, join } = await roomWithBob();
      await h.rooms.ban(alice, roomId, BOB);
      // Bob's server has not seen the ban: its message cites bob's join.
      const msg = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'still here?' }, prev: [join.eventId] });
      const [outcome] = await h.rooms.receive('remote.test', [msg.pdu]);
      assert.equal(outcome!.status, 'soft_failed', outcome!.reason);
      assert.ok(!(await timelineIds(roomId)).includes(msg.eventId));
      await rejectsWith(h.rooms.getEvent(alice, roomId, msg.eventId), 404, 'M_NOT_FOUND');
      const exts = await extremities(roomId);
      assert.equal(exts.length, 1);
      assert.notEqual(exts[0], msg.eventId);
    });

    test('a fork is accepted beside the local tip, its state resolved into the current state, and the next local event merges it', async () => {
      const { roomId, g } = await roomWithBob();
      await h.rooms.sendState(alice, roomId, 'm.room.power_levels', '', {
        users: { [alice.userId]: 100, [BOB]: 50 },
        users_default: 0,
        events_default: 0,
        state_default: 50,
        ban: 50,
        kick: 50,
        redact: 50,
        invite: 0,
      });
      await mirror(roomId, g);
      const forkPoint = g.extremities();
      // Alice talks on while bob's topic change is on its way.
      const local = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'meanwhile' });
      const topic = g.eventSync({ type: 'm.room.topic', sender: BOB, stateKey: '', content: { topic: 'from the fork' }, prev: forkPoint });
      const [outcome] = await h.rooms.receive('remote.test', [topic.pdu]);
      assert.equal(outcome!.status, 'timeline', outcome!.reason);
      assert.deepEqual(await extremities(roomId), [local, topic.eventId].sort());
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.topic', ''), { topic: 'from the fork' });
      const merge = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'merged' });
      const stored = await h.rooms.reader.event(merge);
      assert.deepEqual([...(stored!.pdu.prev_events as string[])].sort(), [local, topic.eventId].sort());
      assert.deepEqual(await extremities(roomId), [merge]);
    });

    test('missing prev events are fetched from the origin and received first', async () => {
      const { roomId, g } = await roomWithBob();
      const m1 = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'one' } });
      const m2 = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'two' } });
      const [outcome] = await h.rooms.receive('remote.test', [m2.pdu]);
      assert.equal(outcome!.status, 'timeline', outcome!.reason);
      assert.equal(await statusOf(m1.eventId), 'timeline');
      const timeline = await timelineIds(roomId);
      assert.deepEqual(timeline.slice(0, 2), [m2.eventId, m1.eventId]);
      assert.deepEqual(await extremities(roomId), [m2.eventId]);
    });

    test('a gap the origin cannot fill: the state comes from the origin and the missing event is a backward extremity', async () => {
      const { roomId, g, join } = await roomWithBob();
      const lost = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'lost' } });
      const next = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'after the gap' } });
      remote.withhold(lost.eventId);
      try {
        const [outcome] = await h.rooms.receive('remote.test', [next.pdu]);
        assert.equal(outcome!.status, 'timeline', outcome!.reason);
      } finally {
        remote.release(lost.eventId);
      }
      assert.equal(await statusOf(lost.eventId), undefined);
      const { rows } = await sql<{ event_id: string }>`select b.event_id from backward_extremities b join rooms r on r.room_nid = b.room_nid
        where r.room_id = ${roomId}`.execute(h.database.db);
      assert.deepEqual(rows.map((r) => r.event_id), [lost.eventId]);
      // Nothing this server has cites bob's join (the lost event did): it stays an extremity too.
      assert.deepEqual(await extremities(roomId), [join.eventId, next.eventId].sort());
    });

    test('a redaction that arrives before its target takes effect when the target arrives', async () => {
      const { roomId, g, join } = await roomWithBob();
      const target = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'regret' }, prev: [join.eventId] });
      // The redaction does not cite its target, so nothing fetches the target with it.
      const redaction = g.eventSync({ type: 'm.room.redaction', sender: BOB, content: {}, redacts: target.eventId, prev: [join.eventId] });
      const [first] = await h.rooms.receive('remote.test', [redaction.pdu]);
      assert.equal(first!.status, 'timeline', first!.reason);
      const [second] = await h.rooms.receive('remote.test', [target.pdu]);
      assert.equal(second!.status, 'timeline', second!.reason);
      const served = await h.rooms.getEvent(alice, roomId, target.eventId);
      assert.deepEqual(served.content, {});
      assert.equal((served.unsigned as { redacted_because?: { event_id: string } }).redacted_because?.event_id, redaction.eventId);
    });
    test('history visibility in a forked room is read from the state before each event', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'public_chat',
        powerLevelContentOverride: { users: { [alice.userId]: 100, [BOB]: 100 } },
      });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      await mirror(roomId, g);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      assert.equal((await h.rooms.receive('remote.test', [join.pdu]))[0]!.status, 'timeline');
      // One fork makes history visible to joined members only, and speaks under that setting ...
      const hv = g.eventSync({ type: 'm.room.history_visibility', sender: BOB, stateKey: '', content: { history_visibility: 'joined' }, prev: [join.eventId] });
      const hidden = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'members only' }, prev: [hv.eventId] });
      // ... another, from before that change, speaks under "shared", though it arrives later.
      const shared = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'for later joiners too' }, prev: [join.eventId] });
      const outcomes = await h.rooms.receive('remote.test', [hv.pdu, hidden.pdu, shared.pdu]);
      assert.deepEqual(outcomes.map((o) => o.status), ['timeline', 'timeline', 'timeline']);
      const dave = user('dave');
      await h.rooms.join(dave, roomId);
      const page = await h.rooms.messages(dave, roomId, { dir: 'b', limit: 50 });
      const seen = page.chunk.map((e) => e.event_id);
      assert.ok(seen.includes(shared.eventId), 'sent under shared: visible to a later joiner');
      assert.ok(!seen.includes(hidden.eventId), 'sent under joined: not visible to a later joiner');
      assert.equal((await h.rooms.getEvent(dave, roomId, shared.eventId)).event_id, shared.eventId);
      await rejectsWith(h.rooms.getEvent(dave, roomId, hidden.eventId), 404, 'M_NOT_FOUND');
    });
  });
}
