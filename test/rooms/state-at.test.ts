// The state before an event from the stored states after its prev events, on both backends: a
// room the room service built, with forks stored beside it as federation would store them. Each
// resolution is checked against state resolution over the same events held in memory, with
// their states computed here by folding the events, and the auth chains against a walk in memory.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey, toRoomEvent, type Pdu, type RoomEvent, type StateKey, type StateMap } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { authChainUnion } from '../../src/protocol/state-res/auth-chain.js';
import { AuthGraph } from '../../src/protocol/state-res/auth-graph.js';
import { resolveState, type StateResEventSource } from '../../src/protocol/state-res/index.js';
import { StoredStateResSource } from '../../src/rooms/state/event-source.js';
import { resolveCurrentState, stateBefore, type StateEntries, type StateRoom } from '../../src/rooms/state/state-at.js';
import { roomEventsInRange } from '../../src/storage/rooms/events.js';
import { roomById } from '../../src/storage/rooms/rooms.js';
import { insertSnapshotEntries, insertSnapshotRow, readSnapshot } from '../../src/storage/rooms/state-snapshots.js';
import { storageBackends } from '../support/databases.js';
import { indexRoomGraph, StoredEventWriter, type StoredTestEvent } from '../support/stored-events.js';
import { SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');
const TOPIC = stateKey('m.room.topic', '');

function idsOf(state: StateEntries): Map<StateKey, string> {
  return new Map([...state].map(([k, ref]) => [k, ref.eventId]));
}

for (const backend of await storageBackends()) {
  describe(`state at an event, on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);
    let room: StateRoom;
    let writer: StoredEventWriter;
    /** Every event of the room by id, as held in memory. */
    const events = new Map<string, RoomEvent>();
    const rejected = new Set<string>();
    /** The state after the room service's last event (a topic), folded from its events. */
    let baseState: Map<StateKey, string>;
    let t0: string;
    let t0After: number;
    const fork: Record<string, StoredTestEvent> = {};

    const memorySource: StateResEventSource = {
      getEvents: (ids) => new Map(ids.flatMap((id) => (events.has(id) ? [[id, events.get(id)!] as const] : []))),
      rejectedAmong: (ids) => new Set(ids.filter((id) => rejected.has(id))),
    };
    const deps = () => ({ db: h.database.db, reader: h.rooms.reader });
    const stateAfter = (base: StateMap, ...added: StoredTestEvent[]) => {
      const out = new Map(base);
      for (const e of added) out.set(stateKey(e.event.type, e.event.state_key!), e.eventId);
      return out;
    };
    const add = async (name: string, spec: Parameters<StoredEventWriter['add']>[0]) => {
      const e = await writer.add(spec);
      fork[name] = e;
      events.set(e.eventId, e.event);
      if (spec.status === 'rejected') rejected.add(e.eventId);
      return e;
    };

    before(async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', name: 'forks' });
      await h.rooms.join(bob, roomId);
      await h.rooms.join(carol, roomId);
      t0 = await h.rooms.sendState(alice, roomId, 'm.room.topic', '', { topic: 'base' });
      const row = (await roomById(h.database.db, roomId))!;
      room = { roomId, roomNid: Number(row.room_nid), version: getRoomVersion(row.room_version)! };
      writer = new StoredEventWriter(h.database.db, room, SERVER, h.key);
      await indexRoomGraph(h.database.db, room.roomNid);

      // The linear part, folded into a state here rather than read from a snapshot.
      baseState = new Map();
      for (const r of await roomEventsInRange(h.database.db, room.roomNid, {}, 'asc', 1000)) {
        const ev = toRoomEvent(JSON.parse(r.json) as Pdu, r.event_id, room.version);
        events.set(ev.event_id, ev);
        if (ev.state_key !== undefined) baseState.set(stateKey(ev.type, ev.state_key), ev.event_id);
        if (ev.event_id === t0) t0After = Number(r.state_after_nid);
      }

      const pl = (users: Record<string, number>) => ({
        users,
        users_default: 0,
        events_default: 0,
        state_default: 50,
        ban: 50,
        kick: 50,
        redact: 50,
        invite: 0,
      });
      // Fork A: alice raises bob, who sets the topic; alice renames the room.
      await add('a1', { sender: alice.userId, type: 'm.room.power_levels', stateKey: '', content: pl({ [alice.userId]: 100, [bob.userId]: 50 }), prev: [t0] });
      await add('a2', { sender: bob.userId, type: 'm.room.topic', stateKey: '', content: { topic: 'A' }, prev: [fork.a1!.eventId] });
      await add('a3', { sender: alice.userId, type: 'm.room.name', stateKey: '', content: { name: 'A' }, prev: [fork.a2!.eventId] });
      // Fork B: alice sets the topic, then raises carol.
      await add('b1', { sender: alice.userId, type: 'm.room.topic', stateKey: '', content: { topic: 'B' }, prev: [t0] });
      await add('b2', { sender: alice.userId, type: 'm.room.power_levels', stateKey: '', content: pl({ [alice.userId]: 100, [carol.userId]: 50 }), prev: [fork.b1!.eventId] });
      // Two messages on the same state.
      await add('x1', { sender: bob.userId, type: 'm.room.message', content: { body: 'x1' }, prev: [t0] });
      await add('x2', { sender: carol.userId, type: 'm.room.message', content: { body: 'x2' }, prev: [t0] });
      // Carol gives herself power: rejected. Her topic cites it: only the rejected event would allow it.
      await add('r1', { sender: carol.userId, type: 'm.room.power_levels', stateKey: '', content: pl({ [alice.userId]: 100, [carol.userId]: 100 }), prev: [t0], status: 'rejected' });
      const create = baseState.get(stateKey('m.room.create', ''))!;
      const carolMember = baseState.get(stateKey('m.room.member', carol.userId))!;
      await add('c1', {
        sender: carol.userId,
        type: 'm.room.topic',
        stateKey: '',
        content: { topic: 'C' },
        prev: [fork.r1!.eventId],
        stateBefore: t0After,
        auth: [create, fork.r1!.eventId, carolMember],
      });
      await add('o1', { sender: alice.userId, type: 'm.room.topic', stateKey: '', content: { topic: 'outlier' }, prev: [t0], status: 'outlier', auth: [create] });
    });

    test('one prev event: its snapshot, read only when asked', async () => {
      const s = await stateBefore(deps(), room, [t0]);
      assert.equal(s.kind, 'stored');
      if (s.kind !== 'stored') return;
      assert.equal(s.snapshotNid, t0After);
      assert.deepEqual(idsOf(await s.read()), baseState);
      const a = await stateBefore(deps(), room, [fork.a2!.eventId]);
      assert.ok(a.kind === 'stored' && a.snapshotNid === fork.a2!.stateAfterNid);
      assert.deepEqual(idsOf(await a.read()), stateAfter(baseState, fork.a1!, fork.a2!));
    });

    test('several prev events on one state: that snapshot', async () => {
      const s = await stateBefore(deps(), room, [fork.x1!.eventId, fork.x2!.eventId, t0]);
      assert.ok(s.kind === 'stored' && s.snapshotNid === t0After);
    });

    test('forks with conflicting topic and power levels: resolved as in memory, stored as a delta', async () => {
      const prevs = [fork.a3!.eventId, fork.b2!.eventId];
      const s = await stateBefore(deps(), room, prevs);
      assert.equal(s.kind, 'resolved');
      if (s.kind !== 'resolved') return;
      const sets = [stateAfter(baseState, fork.a1!, fork.a2!, fork.a3!), stateAfter(baseState, fork.b1!, fork.b2!)];
      const expected = await resolveState(room.roomId, room.version, sets, memorySource);
      assert.deepEqual(idsOf(s.state), expected);
      // Neither fork's state wins whole.
      assert.notDeepEqual(expected, sets[0]);
      assert.notDeepEqual(expected, sets[1]);

      // The base is the nearer input, and the delta turns it into the resolved state.
      const inputs = [fork.a3!.stateAfterNid!, fork.b2!.stateAfterNid!];
      assert.ok(inputs.includes(s.base.nid));
      const baseIds = sets[inputs.indexOf(s.base.nid)]!;
      const other = sets[1 - inputs.indexOf(s.base.nid)]!;
      const differing = (m: StateMap) => [...new Set([...m.keys(), ...expected.keys()])].filter((k) => m.get(k) !== expected.get(k));
      assert.ok(differing(baseIds).length <= differing(other).length);
      assert.deepEqual(s.delta.map((d) => d.key).sort(), differing(baseIds).sort());

      // Written as a snapshot on that base, it reads back as the resolved state.
      const written = await h.database.db.transaction().execute(async (trx) => {
        const info = await insertSnapshotRow(trx, room.roomNid, s.base);
        await insertSnapshotEntries(trx, info.nid, s.delta.map((d) => [d.keyNid, d.event?.nid ?? null] as const));
        return info.nid;
      });
      const nids = await readSnapshot(h.database.db, written);
      assert.deepEqual(new Map([...nids].map(([k, nid]) => [k, [...s.state.values()].find((r) => r.nid === nid)?.eventId])), expected);

      // A source shared by two resolutions answers the second from what the first read.
      const shared = { ...deps(), source: new StoredStateResSource(deps(), room) };
      for (const again of [await resolveCurrentState(shared, room, prevs), await resolveCurrentState(shared, room, prevs)]) {
        assert.ok(again.kind === 'resolved');
        assert.deepEqual(idsOf(again.state), expected);
      }
    });

    test('the auth chain from the database is the one walked in memory', async () => {
      const source = new StoredStateResSource(deps(), room);
      for (const ids of [[fork.a2!.eventId, fork.b2!.eventId], [fork.c1!.eventId], [t0], [...baseState.values()]]) {
        const walked = await authChainUnion(new AuthGraph(room.roomId, memorySource), ids);
        assert.deepEqual(new Set(await source.getAuthChain(ids)), walked);
      }
    });

    test('rejected events are named as such; a resolution that gives an input state reuses its snapshot', async () => {
      const source = new StoredStateResSource(deps(), room);
      const asked = [fork.r1!.eventId, fork.a1!.eventId, t0, fork.o1!.eventId, '$unknown'];
      assert.deepEqual(await source.rejectedAmong(asked), new Set([fork.r1!.eventId]));
      assert.deepEqual(await source.rejectedAmong(asked), new Set([fork.r1!.eventId]));

      // Carol's topic is allowed only by the rejected power levels: the base topic stays, and with
      // it the base snapshot.
      const s = await stateBefore(deps(), room, [fork.x1!.eventId, fork.c1!.eventId]);
      const expected = await resolveState(room.roomId, room.version, [baseState, stateAfter(baseState, fork.c1!)], memorySource);
      assert.equal(expected.get(TOPIC), t0);
      assert.ok(s.kind === 'stored' && s.snapshotNid === t0After);
      assert.deepEqual(idsOf(await s.read()), expected);
    });

    test('prev events without a known state after them are reported', async () => {
      const s = await stateBefore(deps(), room, [fork.a2!.eventId, fork.r1!.eventId, fork.o1!.eventId, '$unknown']);
      assert.deepEqual(s, { kind: 'unknown', missing: [fork.r1!.eventId, fork.o1!.eventId, '$unknown'] });
    });

    test('events: of this room only, redacted ones in redacted form', async () => {
      const message = await h.rooms.sendMessage(bob, room.roomId, 'm.room.message', { msgtype: 'm.text', body: 'gone soon' });
      await h.rooms.redact(alice, room.roomId, message);
      const { roomId: other } = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      const otherEvent = (await h.rooms.reader.roomEvents((await h.rooms.reader.roomInfo(other))!.nid, {}, 'asc', 1))[0]!;
      const source = new StoredStateResSource(deps(), room);
      const got = await source.getEvents([message, fork.a1!.eventId, fork.r1!.eventId, otherEvent.eventId, '$unknown']);
      assert.deepEqual([...got.keys()].sort(), [message, fork.a1!.eventId, fork.r1!.eventId].sort());
      assert.deepEqual(got.get(message)!.content, {});
      assert.deepEqual(got.get(fork.a1!.eventId), fork.a1!.event);
    });
  });
}
