// Events received from another server, as local users' syncs see them: a remote message arrives
// like a local one (and costs an incremental sync no more statements), a soft-failed one never
// arrives, a ban decided on another server's fork moves the banned user's room to `leave`, a join
// that a merge of forks makes current (soft-failed when it came) opens the shared history, and a
// message from a fork made before a user joined stays hidden from them where history is joined-only.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Pdu } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import type { SyncRequest } from '../../src/sync/sync-service.js';
import { HttpClient } from '../support/http-client.js';
import { RemoteServer, RoomGraph } from '../support/remote-server.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { statements } from '../support/statements.js';

const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

for (const { backend, skip } of await serverBackends()) {
  describe(`received events in sync on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const remote = new RemoteServer({ serverName: 'remote.test' });

    async function setup(powerOfBob = 0) {
      const { rooms, sync, keyRing } = hs.server.services;
      keyRing.add('remote.test', remote.signingKey.keyId, { publicKey: remote.signingKey.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
      const alice = await hs.registerUser(`alice${Math.random().toString(36).slice(2, 8)}`, 'secret');
      const actor = { userId: alice.userId, deviceId: alice.deviceId };
      const { roomId } = await rooms.createRoom(actor, {
        preset: 'public_chat',
        powerLevelContentOverride: { users: { [alice.userId]: 100, [BOB]: powerOfBob } },
      });
      const g = new RoomGraph(roomId, VERSION, [remote]);
      const mirror = async () => {
        const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
          where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(hs.server.core.db);
        for (const r of rows) if (!g.events().some((e) => JSON.stringify(e.pdu) === r.json)) await g.insert(JSON.parse(r.json) as Pdu);
      };
      await mirror();
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      const receive = async (pdu: Pdu) => {
        const [outcome] = await rooms.receive('remote.test', [pdu]);
        return outcome!;
      };
      assert.equal((await receive(join.pdu)).status, 'timeline');
      const req = (user: { userId: string; deviceId: string }, since?: string): SyncRequest => ({
        userId: user.userId,
        deviceId: user.deviceId,
        setPresence: 'offline',
        ...(since !== undefined ? { since } : {}),
      });
      return { rooms, sync, alice, actor, roomId, g, join, mirror, receive, req };
    }

    test('a remote message reaches an incremental sync; a soft-failed one never does', async () => {
      const { rooms, sync, actor, roomId, g, join, receive, req } = await setup();
      let token = (await sync.sync(req(actor))).next_batch;
      const hello = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'hello from afar' } });
      assert.equal((await receive(hello.pdu)).status, 'timeline');
      const first = await sync.sync(req(actor, token));
      assert.deepEqual(first.rooms.join[roomId]?.timeline.events.map((e) => e.event_id), [hello.eventId]);
      token = first.next_batch;

      await rooms.ban(actor, roomId, BOB);
      const afterBan = await sync.sync(req(actor, token));
      token = afterBan.next_batch;
      // Bob's server has not seen the ban: its message cites the state before it.
      const late = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'still here?' }, prev: [join.eventId] });
      assert.equal((await receive(late.pdu)).status, 'soft_failed');
      const after = await sync.sync(req(actor, token));
      assert.equal(after.rooms.join[roomId], undefined, 'nothing new for the room');
      const page = await rooms.messages(actor, roomId, { dir: 'b', limit: 50 });
      assert.ok(!page.chunk.some((e) => e.event_id === late.eventId));
    });

    test("a ban from another server's fork moves the banned user's room to leave", async () => {
      // Bob of the remote server is an admin of the room.
      const { rooms, sync, actor, roomId, g, mirror, receive, req } = await setup(100);
      const carol = await hs.registerUser(`carol${Math.random().toString(36).slice(2, 8)}`, 'secret');
      const carolActor = { userId: carol.userId, deviceId: carol.deviceId };
      await rooms.join(carolActor, roomId);
      await mirror();
      const forkPoint = g.extremities();
      let token = (await sync.sync(req(carolActor))).next_batch;
      // Alice talks on here while bob, on his server, bans carol from the state before that.
      const local = await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: 'meanwhile' });
      const ban = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: carol.userId, content: { membership: 'ban' }, prev: forkPoint });
      assert.equal((await receive(ban.pdu)).status, 'timeline');
      const s = await sync.sync(req(carolActor, token));
      assert.equal(s.rooms.join[roomId], undefined);
      const left = s.rooms.leave[roomId];
      assert.ok(left !== undefined, `the room is under leave: ${JSON.stringify(s.rooms)}`);
      assert.ok(left.timeline.events.some((e) => e.event_id === ban.eventId), 'the ban is in the leave timeline');
      token = s.next_batch;
      const members = await rooms.joinedMembers(actor, roomId);
      assert.ok(!(carol.userId in members));
      assert.ok(local.length > 0);
    });

    test('a soft-failed join that a merge makes current opens the shared history, as joining does', async () => {
      // Bob of the remote server is an admin of the room.
      const { rooms, sync, actor, roomId, g, mirror, receive, req } = await setup(100);
      const carol = await hs.registerUser(`carol${Math.random().toString(36).slice(2, 8)}`, 'secret');
      const carolActor = { userId: carol.userId, deviceId: carol.deviceId };
      const before = await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: 'before carol' });
      await mirror();
      // Carol's join, made on her server's side of a fork (signed with its key), races bob's ban
      // and unban; it comes after the ban, so it is soft-failed, but the merge resolves to it.
      g.addServer(new RemoteServer({ serverName: hs.serverName, signingKey: hs.server.core.signingKey }));
      const forkPoint = g.extremities();
      const ban = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: carol.userId, content: { membership: 'ban' }, prev: forkPoint });
      const unban = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: carol.userId, content: { membership: 'leave' }, prev: [ban.eventId] });
      const join = g.eventSync({ type: 'm.room.member', sender: carol.userId, stateKey: carol.userId, content: { membership: 'join' }, prev: forkPoint });
      assert.equal((await receive(ban.pdu)).status, 'timeline');
      assert.equal((await receive(join.pdu)).status, 'soft_failed');
      assert.equal((await receive(unban.pdu)).status, 'timeline');
      const merge = await g.event({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'merged' }, prev: [unban.eventId, join.eventId] });
      assert.equal((await receive(merge.pdu)).status, 'timeline');
      assert.deepEqual(Object.keys(await rooms.joinedMembers(actor, roomId)).sort(), [actor.userId, BOB, carol.userId].sort());

      const s = await sync.sync(req(carolActor));
      const timeline = s.rooms.join[roomId]?.timeline.events.map((e) => e.event_id) ?? [];
      assert.ok(timeline.includes(before), `the message before the fork is in carol's timeline: ${JSON.stringify(s.rooms)}`);
      const page = await rooms.messages(carolActor, roomId, { dir: 'b', limit: 50 });
      assert.ok(page.chunk.some((e) => e.event_id === before), 'and in /messages');
    });

    test('a message from a fork made before a user joined stays hidden from them where history is joined-only', async () => {
      const { rooms, sync, actor, roomId, g, mirror, receive, req } = await setup();
      await rooms.sendState(actor, roomId, 'm.room.history_visibility', '', { history_visibility: 'joined' });
      await mirror();
      const forkPoint = g.extremities();
      const carol = await hs.registerUser(`carol${Math.random().toString(36).slice(2, 8)}`, 'secret');
      const carolActor = { userId: carol.userId, deviceId: carol.deviceId };
      await rooms.join(carolActor, roomId);
      const carolToken = (await sync.sync(req(carolActor))).next_batch;
      const aliceToken = (await sync.sync(req(actor))).next_batch;
      const carolHttp = new HttpClient(hs.baseUrl, { token: carol.accessToken });
      const from = (await carolHttp.get('/initialSync', { query: { limit: 0 } })).body.end as string;
      // Bob's server has not seen carol's join: his message's state before does not hold her. It
      // takes a position after her join all the same.
      const unseen = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: 'before carol' }, prev: forkPoint });
      assert.equal((await receive(unseen.pdu)).status, 'timeline');
      const seen = await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: 'after carol' });

      const ids = (s: Awaited<ReturnType<typeof sync.sync>>) => s.rooms.join[roomId]?.timeline.events.map((e) => e.event_id) ?? [];
      const visible = async () => {
        const incremental = ids(await sync.sync(req(carolActor, carolToken)));
        const initial = ids(await sync.sync(req(carolActor)));
        const messages = (await rooms.messages(carolActor, roomId, { dir: 'b', limit: 50 })).chunk.map((e) => e.event_id);
        // The legacy event stream too.
        const stream = await carolHttp.get('/events', { query: { from, timeout: 0 } });
        assert.equal(stream.status, 200, JSON.stringify(stream.body));
        const events = (stream.body.chunk as { event_id: string }[]).map((e) => e.event_id);
        return { incremental, initial, messages, events };
      };
      for (const [where, got] of Object.entries(await visible())) {
        assert.ok(!got.includes(unseen.eventId), `${where}: the fork's message is hidden from carol`);
        assert.ok(got.includes(seen), `${where}: alice's message after the join is shown`);
      }
      assert.ok(ids(await sync.sync(req(actor, aliceToken))).includes(unseen.eventId), 'alice, joined on both sides, sees it');

      // Read from the database again (as after a restart): decided the same way.
      for (const id of [unseen.eventId, seen]) rooms.reader.evict(id);
      for (const [where, got] of Object.entries(await visible())) {
        assert.ok(!got.includes(unseen.eventId), `${where}, read again: hidden`);
        assert.ok(got.includes(seen), `${where}, read again: shown`);
      }
    });

    test('an incremental sync after a remote message reads no more than after a local one', async () => {
      const { rooms, sync, actor, roomId, g, mirror, receive, req } = await setup();
      const db = hs.server.core.db;
      let token = (await sync.sync(req(actor))).next_batch;
      // Warm: one of each first.
      await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: 'warm' });
      token = (await sync.sync(req(actor, token))).next_batch;
      await mirror();
      const costs = { local: 0, remote: 0 };
      for (let i = 0; i < 3; i++) {
        await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: `local ${i}` });
        costs.local = Math.max(
          costs.local,
          await statements(db, async () => {
            token = (await sync.sync(req(actor, token))).next_batch;
          }),
        );
        await mirror();
        const msg = g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: `remote ${i}` } });
        assert.equal((await receive(msg.pdu)).status, 'timeline');
        costs.remote = Math.max(
          costs.remote,
          await statements(db, async () => {
            token = (await sync.sync(req(actor, token))).next_batch;
          }),
        );
      }
      assert.ok(costs.remote <= costs.local, JSON.stringify(costs));
    });
  });
}
