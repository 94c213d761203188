import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkContentHash, computeEventId, verifyEventSignature } from '../../src/protocol/hashes.js';
import { referenceIds, type Pdu } from '../../src/protocol/events.js';
import { roomVersions, getRoomVersion } from '../../src/protocol/room-versions.js';
import { RoomService } from '../../src/rooms/service.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import type { StreamChange } from '../../src/streams/bus.js';
import { STATE_CHAIN_LIMIT } from '../../src/storage/rooms/state-snapshots.js';
import { storageBackends } from '../support/databases.js';
import { statements } from '../support/statements.js';
import { rejectsWith, SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');

for (const backend of await storageBackends()) {
  describe(`room event pipeline on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);
    const changes: StreamChange[] = [];

    before(() => {
      const notify = h.notifier.notify.bind(h.notifier);
      h.notifier.notify = (c) => {
        changes.push(c);
        notify(c);
      };
    });

    const rows = (roomId: string) =>
      h.database.db
        .selectFrom('events as e')
        .innerJoin('rooms as r', 'r.room_nid', 'e.room_nid')
        .select(['e.event_id', 'e.json', 'e.stream_ordering', 'e.type', 'e.state_after_nid', 'e.state_before_nid'])
        .where('r.room_id', '=', roomId)
        .orderBy('e.stream_ordering')
        .execute();
    const count = async (table: 'events' | 'state_snapshot_entries' | 'state_snapshots') =>
      Number((await h.database.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

    test('events of rooms of every version are signed by the server key, with correct ids and hashes', async () => {
      for (const id of Object.keys(roomVersions)) {
        const version = getRoomVersion(id)!;
        const { roomId } = await h.rooms.createRoom(alice, { roomVersion: id, name: `v${id}` });
        await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: `in v${id}` });
        const stored = await rows(roomId);
        assert.ok(stored.length >= 6);
        for (const r of stored) {
          const pdu = JSON.parse(r.json) as Pdu;
          assert.ok(verifyEventSignature(pdu, SERVER, h.key.keyId, h.key.publicKey, version), `signature of ${r.type} in v${id}`);
          assert.ok(checkContentHash(pdu, version), `content hash of ${r.type} in v${id}`);
          assert.equal(computeEventId(pdu, version), r.event_id);
          if (version.eventIdFormat === 'v1') assert.match(r.event_id, new RegExp(`^\\$[^:]+:${SERVER.replace('.', '\\.')}$`));
          else assert.match(r.event_id, version.eventIdFormat === 'v3' ? /^\$[A-Za-z0-9+/]{43}$/ : /^\$[A-Za-z0-9_-]{43}$/);
          // v12: the create event has no room_id; its id names the room.
          if (version.createEventRoomId && r.type === 'm.room.create') {
            assert.equal('room_id' in pdu, false);
            assert.equal(roomId, '!' + r.event_id.slice(1));
          } else assert.equal(pdu.room_id, roomId);
          assert.equal(pdu.sender, alice.userId);
        }
        // v1–v2 cite events with their reference hashes.
        const create = JSON.parse(stored[1]!.json) as Pdu;
        if (version.eventIdFormat === 'v1') assert.ok(Array.isArray(create.prev_events[0]));
        else assert.equal(typeof create.prev_events[0], 'string');
      }
    });

    test('a denied event is 403 M_FORBIDDEN with the reason, and nothing is stored', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      const before = await count('events');
      const err = await rejectsWith(h.rooms.sendMessage(bob, roomId, 'm.room.message', { body: 'not a member' }), 403, 'M_FORBIDDEN');
      assert.match(err.message, /not joined/);
      await rejectsWith(h.rooms.sendState(bob, roomId, 'm.room.name', '', { name: 'x' }), 403, 'M_FORBIDDEN');
      assert.equal(await count('events'), before);
      // The room is unharmed: the next event follows the last stored one.
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'fine' });
      const stored = await rows(roomId);
      const last = JSON.parse(stored[stored.length - 1]!.json) as Pdu;
      assert.deepEqual(referenceIds(last.prev_events), [stored[stored.length - 2]!.event_id]);
    });

    test('the same device and txnId give the same event, sent once; other devices or ids send anew', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      const before = await count('events');
      const [a, b] = await Promise.all([
        h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'once' }, 'txn-1'),
        h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'once' }, 'txn-1'),
      ]);
      assert.equal(a, b);
      assert.equal(await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'once' }, 'txn-1'), a);
      const otherDevice = await h.rooms.sendMessage(user('alice', 'OTHER'), roomId, 'm.room.message', { body: 'once' }, 'txn-1');
      const otherTxn = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'once' }, 'txn-2');
      assert.notEqual(otherDevice, a);
      assert.notEqual(otherTxn, a);
      assert.equal(await count('events'), before + 3);
      // After a restart (a fresh service over the same database) the stored txnId still answers.
      const again = new RoomService({ db: h.database.db, dialect: h.database.dialect, serverName: SERVER, signingKey: h.key, notifier: new InProcessBus() });
      assert.equal(await again.sendMessage(alice, roomId, 'm.room.message', { body: 'once' }, 'txn-1'), a);
      assert.equal(await count('events'), before + 3);
    });

    test('concurrent sends into one room form one linear chain of prev_events and depths', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      const sent = await Promise.all(
        Array.from({ length: 40 }, (_, i) => h.rooms.sendMessage(i % 2 === 0 ? alice : bob, roomId, 'm.room.message', { body: `m${i}` }, `c${i}`)),
      );
      assert.equal(new Set(sent).size, 40);
      const stored = await rows(roomId);
      for (let i = 1; i < stored.length; i++) {
        const pdu = JSON.parse(stored[i]!.json) as Pdu;
        const prev = JSON.parse(stored[i - 1]!.json) as Pdu;
        assert.deepEqual(referenceIds(pdu.prev_events), [stored[i - 1]!.event_id]);
        assert.equal(pdu.depth, prev.depth + 1);
      }
      const extremities = await h.database.db.selectFrom('forward_extremities as f').innerJoin('events as e', 'e.event_nid', 'f.event_nid').select('e.event_id').innerJoin('rooms as r', 'r.room_nid', 'f.room_nid').where('r.room_id', '=', roomId).execute();
      assert.deepEqual(extremities.map((e) => e.event_id), [stored[stored.length - 1]!.event_id]);
    });

    test('concurrent sends into different rooms all land, each room linear', async () => {
      const roomIds = await Promise.all(Array.from({ length: 5 }, () => h.rooms.createRoom(alice, {}).then((r) => r.roomId)));
      await Promise.all(
        roomIds.flatMap((roomId) => Array.from({ length: 8 }, (_, i) => h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: `${i}` }, `${roomId}-${i}`))),
      );
      for (const roomId of roomIds) {
        const stored = await rows(roomId);
        assert.equal(stored.filter((r) => r.type === 'm.room.message').length, 8);
        for (let i = 1; i < stored.length; i++) {
          assert.deepEqual(referenceIds((JSON.parse(stored[i]!.json) as Pdu).prev_events), [stored[i - 1]!.event_id]);
        }
      }
    });

    test('a batch of messages into several rooms: each event its own row, position and references; on PostgreSQL one statement', async () => {
      const roomIds = await Promise.all([0, 1, 2].map(() => h.rooms.createRoom(alice, {}).then((r) => r.roomId)));
      for (const roomId of roomIds) await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'warm' }, `warm-${roomId}`);
      let sent: string[] = [];
      const n = await statements(h.database.db, async () => {
        sent = await Promise.all(
          roomIds.flatMap((roomId) => Array.from({ length: 4 }, (_, i) => h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: `${i}` }, `batch-${roomId}-${i}`))),
        );
      });
      if (backend.name === 'postgres') assert.equal(n, 1, 'the batch is one statement');
      const stored = await h.database.db
        .selectFrom('events')
        .select(['event_nid', 'event_id', 'room_nid', 'stream_ordering', 'json'])
        .where('event_id', 'in', sent)
        .orderBy('event_nid')
        .execute();
      assert.equal(stored.length, sent.length);
      // Positions rise with nids, one apart: the batch took consecutive positions in its order.
      for (let i = 1; i < stored.length; i++) assert.equal(Number(stored[i]!.stream_ordering), Number(stored[i - 1]!.stream_ordering) + 1);
      for (const r of stored) {
        const pdu = JSON.parse(r.json) as Pdu;
        const edges = await h.database.db.selectFrom('event_edges').select('prev_event_id').where('event_nid', '=', r.event_nid).execute();
        assert.deepEqual(edges.map((e) => e.prev_event_id), referenceIds(pdu.prev_events));
        // Auth references are rows for state events only.
        const auth = await h.database.db.selectFrom('event_auth').select('auth_event_id').where('event_nid', '=', r.event_nid).execute();
        assert.deepEqual(new Set(auth.map((a) => a.auth_event_id)), new Set(pdu.state_key === undefined ? [] : referenceIds(pdu.auth_events)));
      }
      for (const roomId of roomIds) {
        const room = await h.database.db.selectFrom('rooms').select(['room_nid', 'latest_position']).where('room_id', '=', roomId).executeTakeFirstOrThrow();
        const own = stored.filter((r) => Number(r.room_nid) === Number(room.room_nid));
        const last = own[own.length - 1]!;
        assert.equal(Number(room.latest_position), Number(last.stream_ordering));
        const extremities = await h.database.db.selectFrom('forward_extremities').select('event_nid').where('room_nid', '=', room.room_nid).execute();
        assert.deepEqual(extremities.map((e) => Number(e.event_nid)), [Number(last.event_nid)]);
      }
      // The rooms go on from there.
      for (const roomId of roomIds) await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'after' });
    });

    test('a message writes no state rows; a state event writes one snapshot; the chain stays bounded', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      const [snapshots, entries] = [await count('state_snapshots'), await count('state_snapshot_entries')];
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'no state' });
      assert.equal(await count('state_snapshots'), snapshots);
      assert.equal(await count('state_snapshot_entries'), entries);
      await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'one' });
      assert.equal(await count('state_snapshots'), snapshots + 1);
      // Its entry, and those of the small deltas before it that it takes in (planSnapshot).
      assert.ok((await count('state_snapshot_entries')) > entries);
      // A message points at the snapshot the last state event made.
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'after' });
      let stored = await rows(roomId);
      assert.equal(stored[stored.length - 1]!.state_before_nid, stored[stored.length - 2]!.state_after_nid);
      assert.equal(stored[stored.length - 1]!.state_after_nid, stored[stored.length - 2]!.state_after_nid);
      for (let i = 0; i < STATE_CHAIN_LIMIT + 5; i++) await h.rooms.sendState(alice, roomId, 'x.counter', '', { n: i });
      const chains = await h.database.db.selectFrom('state_snapshots').select(['chain_length']).execute();
      assert.ok(chains.every((c) => c.chain_length <= STATE_CHAIN_LIMIT));
      // The state read back at the end is the room's full state.
      const state = await h.rooms.state(alice, roomId);
      assert.equal(state.find((e) => e.type === 'x.counter')!.content.n, STATE_CHAIN_LIMIT + 4);
      assert.equal(state.find((e) => e.type === 'm.room.topic')!.content.topic, 'one');
      assert.ok(state.some((e) => e.type === 'm.room.create'));
      stored = await rows(roomId);
      assert.ok(stored.length > STATE_CHAIN_LIMIT);
    });

    test('the notifier hears of every commit with its position, room and member targets', async () => {
      changes.length = 0;
      const { roomId } = await h.rooms.createRoom(alice, { invite: [bob.userId] });
      const eventId = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'ping' });
      const stored = await rows(roomId);
      const last = changes[changes.length - 1]!;
      assert.equal(last.stream, 'events');
      assert.deepEqual(last.roomIds, [roomId]);
      assert.equal(last.position, Number(stored.find((r) => r.event_id === eventId)!.stream_ordering));
      // The creation (one commit) named the invitee.
      assert.ok(changes.some((c) => c.userIds?.includes(bob.userId)));
    });

    test('size limits: 413 M_TOO_LARGE past 65,536 bytes or a 255-byte type; nothing stored', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      const before = await count('events');
      await rejectsWith(h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'x'.repeat(70_000) }), 413, 'M_TOO_LARGE');
      await rejectsWith(h.rooms.sendMessage(alice, roomId, 'x'.repeat(256), { body: 'x' }), 413, 'M_TOO_LARGE');
      await rejectsWith(h.rooms.sendState(alice, roomId, 'x.t', 'k'.repeat(256), {}), 413, 'M_TOO_LARGE');
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'x'.repeat(60_000) });
      assert.equal(await count('events'), before + 1);
    });

    test('well-known state fields clients read as strings must be strings (400 M_BAD_JSON)', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {});
      await rejectsWith(h.rooms.sendState(alice, roomId, 'm.room.name', '', { name: 5 }), 400, 'M_BAD_JSON');
      await rejectsWith(h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: ['x'] }), 400, 'M_BAD_JSON');
      await h.rooms.sendState(alice, roomId, 'm.room.name', '', { name: 'fine' });
      await h.rooms.sendState(alice, roomId, 'x.custom', '', { name: 5 });
    });

    test('content must be strict canonical JSON from v6 (400 M_BAD_JSON); v5 accepts floats', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { roomVersion: '10' });
      await rejectsWith(h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'x', n: 1.5 }), 400, 'M_BAD_JSON');
      await rejectsWith(h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'x', n: 2 ** 60 }), 400, 'M_BAD_JSON');
      const old = await h.rooms.createRoom(alice, { roomVersion: '5' });
      const id = await h.rooms.sendMessage(alice, old.roomId, 'm.room.message', { body: 'x', n: 1.5 });
      assert.equal((await h.rooms.getEvent(alice, old.roomId, id)).content.n, 1.5);
    });

    test('a job failing in a shared transaction fails alone; the others are written', async () => {
      const saboteur = user('saboteur');
      const alias = `#sabotaged:${SERVER}`;
      let roomId = '';
      let others: Promise<string>[] = [];
      // The creation looks up its creator's profile after its alias check and before its write. There
      // the alias is taken behind its back (so that only its write can find it taken), and other sends
      // are started, to be queued in the same turn as the creation and share its transaction.
      const rooms: RoomService = new RoomService({
        db: h.database.db,
        dialect: h.database.dialect,
        serverName: SERVER,
        signingKey: h.key,
        notifier: h.notifier,
        profiles: {
          profile: async (u) => {
            if (u !== saboteur.userId) return undefined;
            await h.database.db.insertInto('room_aliases').values({ alias, room_id: '!elsewhere:hs.test', creator: '@x:hs.test', created_ts: 0 }).execute();
            others = Array.from({ length: 5 }, (_, i) => rooms.sendMessage(alice, roomId, 'm.room.message', { body: `shared ${i}` }));
            return undefined;
          },
        },
      });
      roomId = (await rooms.createRoom(alice, {})).roomId;
      await rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'warm' });
      await rejectsWith(rooms.createRoom(saboteur, { roomAliasName: 'sabotaged' }), 400, 'M_ROOM_IN_USE');
      assert.equal(others.length, 5);
      const ids = await Promise.all(others);
      const stored = await rows(roomId);
      for (const id of ids) assert.ok(stored.some((r) => r.event_id === id));
      // The alias still names the room it was given to, and the failed creation left no room.
      assert.equal((await h.database.db.selectFrom('room_aliases').select('room_id').where('alias', '=', alias).executeTakeFirstOrThrow()).room_id, '!elsewhere:hs.test');
      assert.equal((await h.database.db.selectFrom('rooms').select('room_id').where('creator', '=', saboteur.userId).execute()).length, 0);
      // And the room goes on.
      await rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'after' });
    });

    test('with few room heads kept in memory, rooms are reloaded as needed and stay linear', async () => {
      const small = new RoomService({ db: h.database.db, dialect: h.database.dialect, serverName: SERVER, signingKey: h.key, notifier: new InProcessBus(), maxRoomHeads: 2 });
      const roomIds: string[] = [];
      for (let i = 0; i < 5; i++) roomIds.push((await small.createRoom(alice, { preset: 'public_chat' })).roomId);
      for (let round = 0; round < 3; round++) {
        await Promise.all(roomIds.flatMap((roomId, i) => [
          small.sendMessage(alice, roomId, 'm.room.message', { body: `r${round}` }, `ev-${round}-${i}`),
          small.sendState(alice, roomId, 'x.round', '', { round }),
        ]));
      }
      for (const roomId of roomIds) {
        const stored = await rows(roomId);
        for (let i = 1; i < stored.length; i++) {
          assert.deepEqual(referenceIds((JSON.parse(stored[i]!.json) as Pdu).prev_events), [stored[i - 1]!.event_id]);
        }
        assert.deepEqual(await small.stateEvent(alice, roomId, 'x.round', ''), { round: 2 });
      }
    });

    test('a fresh service over the same database continues each room where it stopped', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const last = await h.rooms.sendMessage(alice, roomId, 'm.room.message', { body: 'before restart' });
      const again = new RoomService({ db: h.database.db, dialect: h.database.dialect, serverName: SERVER, signingKey: h.key, notifier: new InProcessBus() });
      // State (power levels, join rules) is known after the restart: bob may join, may not set the name.
      await again.join(bob, roomId);
      await rejectsWith(again.sendState(bob, roomId, 'm.room.name', '', { name: 'no' }), 403, 'M_FORBIDDEN');
      const next = await again.sendMessage(alice, roomId, 'm.room.message', { body: 'after restart' });
      const stored = await rows(roomId);
      const byId = new Map(stored.map((r) => [r.event_id, JSON.parse(r.json) as Pdu]));
      const joinId = stored[stored.length - 2]!.event_id;
      assert.deepEqual(referenceIds(byId.get(joinId)!.prev_events), [last]);
      assert.deepEqual(referenceIds(byId.get(next)!.prev_events), [joinId]);
    });
  });
}
