// The event-graph storage functions (storage/rooms/graph.ts) on SQLite and PostgreSQL, over event
// rows written directly: auth-chain walks over a small DAG with a missing auth event and a cycle,
// prev-event citations, backward extremities, state deltas by range, latest positions, backfill
// positions, joined servers, statuses and redactions that arrive before their target.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { EventStatus, Schema } from '../../src/storage/schema.js';
import { insertRoom } from '../../src/storage/rooms/rooms.js';
import { StateKeyNids } from '../../src/storage/rooms/state-snapshots.js';
import {
  addBackwardExtremities,
  adjustJoinedServers,
  allocateBackfillPositions,
  authChainIds,
  backwardExtremities,
  citedAmong,
  insertGraphRows,
  insertStateDeltas,
  joinedServers,
  latestPositions,
  redactionsTargeting,
  removeBackwardExtremities,
  setLatestPosition,
  stateDeltasInRange,
  statusesOf,
} from '../../src/storage/rooms/graph.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

interface EventSpec {
  id: string;
  roomNid: number;
  status?: EventStatus;
  position?: number | null;
  type?: string;
  stateKey?: string;
  redacts?: string;
  auth?: string[];
  prev?: string[];
  /** False: no event_auth rows, as the writer stores a message. */
  authRows?: boolean;
}

for (const backend of await storageBackends()) {
  describe(`event-graph storage on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let roomA: number;
    let roomB: number;
    let nextPosition = 1;
    const db = () => database.db;

    /** Stores an event row with its graph rows; returns its nid. */
    async function addEvent(spec: EventSpec): Promise<number> {
      const status = spec.status ?? 'timeline';
      const position = spec.position !== undefined ? spec.position : status === 'timeline' ? nextPosition++ : null;
      const pdu = { type: spec.type ?? 'm.room.message', auth_events: spec.auth ?? [], prev_events: spec.prev ?? [], content: {} };
      const row = await db()
        .insertInto('events')
        .values({
          event_id: spec.id, room_nid: spec.roomNid, type: pdu.type, state_key: spec.stateKey ?? null, sender: '@a:hs', origin_server_ts: 0, depth: 1,
          stream_ordering: position, status, json: JSON.stringify(pdu), unsigned_json: null, redacts: spec.redacts ?? null, redacted_by: null,
          rejection_reason: status === 'rejected' ? 'test' : null, state_before_nid: null, state_after_nid: null, txn_device_id: null, txn_id: null,
        })
        .returning('event_nid')
        .executeTakeFirstOrThrow();
      const nid = Number(row.event_nid);
      await insertGraphRows(db(), [{ eventNid: nid, authEventIds: spec.authRows === false ? [] : pdu.auth_events, prevEventIds: pdu.prev_events }]);
      return nid;
    }

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateToLatest(database.db as never, database.dialect);
      roomA = await insertRoom(db(), { roomId: '!a:hs', version: '10', creator: '@a:hs', createdTs: 0, isPublic: false });
      roomB = await insertRoom(db(), { roomId: '!b:hs', version: '10', creator: '@a:hs', createdTs: 0, isPublic: false });
    });
    after(async () => {
      await database?.close();
      await target?.drop();
    });

    test('auth chains: the union over stored events, stopping at missing auth events, ending on cycles', async () => {
      await addEvent({ id: '$create', roomNid: roomA, type: 'm.room.create', stateKey: '' });
      await addEvent({ id: '$pl', roomNid: roomA, type: 'm.room.power_levels', stateKey: '', auth: ['$create'], prev: ['$create'] });
      await addEvent({ id: '$join', roomNid: roomA, type: 'm.room.member', stateKey: '@a:hs', status: 'outlier', auth: ['$create', '$pl'], prev: ['$pl'] });
      // Cites an auth event this server does not have; the walk goes no further there.
      await addEvent({ id: '$odd', roomNid: roomA, type: 'm.room.member', stateKey: '@b:hs', status: 'rejected', auth: ['$create', '$unknown'], prev: ['$join'] });
      await addEvent({ id: '$msg', roomNid: roomA, auth: ['$create', '$pl', '$join', '$odd'], prev: ['$join', '$odd'] });
      await addEvent({ id: '$lost', roomNid: roomA, auth: ['$unknown'], prev: ['$msg'] });

      assert.deepEqual([...(await authChainIds(db(), ['$msg']))].sort(), ['$create', '$join', '$odd', '$pl']);
      assert.deepEqual([...(await authChainIds(db(), ['$odd']))].sort(), ['$create']);
      assert.deepEqual([...(await authChainIds(db(), ['$lost']))], []);
      assert.deepEqual([...(await authChainIds(db(), ['$create']))], []);
      // A given event is in the union only when another's chain reaches it.
      assert.deepEqual([...(await authChainIds(db(), ['$join', '$pl']))].sort(), ['$create', '$pl']);
      assert.deepEqual([...(await authChainIds(db(), ['$unknown', '$nothing']))], []);
      assert.deepEqual([...(await authChainIds(db(), []))], []);

      // A message's auth references are no rows (the writer keeps rows for state events): its first
      // step is read from its JSON.
      await addEvent({ id: '$bare', roomNid: roomA, auth: ['$create', '$pl', '$join'], prev: ['$msg'], authRows: false });
      assert.deepEqual([...(await authChainIds(db(), ['$bare']))].sort(), ['$create', '$join', '$pl']);
      assert.deepEqual([...(await authChainIds(db(), ['$bare', '$odd']))].sort(), ['$create', '$join', '$pl']);

      // Events that cite each other (only a broken remote could send them): the walk still ends.
      await addEvent({ id: '$loop1', roomNid: roomB, status: 'outlier', auth: ['$loop2'] });
      await addEvent({ id: '$loop2', roomNid: roomB, status: 'outlier', auth: ['$loop1', '$create'] });
      assert.deepEqual([...(await authChainIds(db(), ['$loop1']))].sort(), ['$create', '$loop1', '$loop2']);
    });

    test('graph rows: the cited ids, once each, in bounded statements; which ids are cited as prev events', async () => {
      const nid = await addEvent({ id: '$many', roomNid: roomB, status: 'outlier' });
      const many = Array.from({ length: 2500 }, (_, i) => `$auth${i}`);
      await insertGraphRows(db(), [{ eventNid: nid, authEventIds: [...many, '$auth0'], prevEventIds: ['$p1', '$p2', '$p1'] }]);
      const auth = await db().selectFrom('event_auth').select('auth_event_id').where('event_nid', '=', nid).execute();
      assert.equal(auth.length, 2500);
      const edges = await db().selectFrom('event_edges').select('prev_event_id').where('event_nid', '=', nid).orderBy('prev_event_id').execute();
      assert.deepEqual(edges.map((e) => e.prev_event_id), ['$p1', '$p2']);

      // Only timeline (and soft-failed) events count: $pl is cited by an outlier alone, $p2 too.
      const cited = await citedAmong(db(), ['$create', '$pl', '$join', '$msg', '$p2', '$never', '$odd', '$pl']);
      assert.deepEqual([...cited].sort(), ['$create', '$join', '$msg', '$odd']);
      assert.deepEqual([...(await citedAmong(db(), []))], []);
    });

    test('backward extremities: per room, added once, removed by id', async () => {
      await addBackwardExtremities(db(), roomA, ['$gap2', '$gap1', '$gap1']);
      await addBackwardExtremities(db(), roomA, ['$gap1', '$gap3']);
      await addBackwardExtremities(db(), roomB, ['$gap1']);
      assert.deepEqual(await backwardExtremities(db(), roomA), ['$gap1', '$gap2', '$gap3']);
      await db().transaction().execute((trx) => removeBackwardExtremities(trx, roomA, ['$gap1', '$gap3', '$absent']));
      assert.deepEqual(await backwardExtremities(db(), roomA), ['$gap2']);
      assert.deepEqual(await backwardExtremities(db(), roomB), ['$gap1']);
      await removeBackwardExtremities(db(), roomA, []);
      await addBackwardExtremities(db(), roomA, []);
      assert.deepEqual(await backwardExtremities(db(), roomA), ['$gap2']);
    });

    test('state deltas: by position range and room, ordered by position then key, with type and state key', async () => {
      const keys = new StateKeyNids();
      const topic = await keys.getOrCreate(db(), 'm.room.topic', '');
      const alice = await keys.getOrCreate(db(), 'm.room.member', '@alice:hs');
      const name = await keys.getOrCreate(db(), 'm.room.name', '');
      const [low, high] = topic < alice ? [topic, alice] : [alice, topic];
      await db().transaction().execute((trx) =>
        insertStateDeltas(trx, [
          { position: 100, roomNid: roomA, stateKeyNid: topic, eventNid: 1, prevEventNid: null, snapshotNid: 7 },
          { position: 101, roomNid: roomA, stateKeyNid: high, eventNid: 3, prevEventNid: 2, snapshotNid: 7 },
          { position: 101, roomNid: roomA, stateKeyNid: low, eventNid: null, prevEventNid: 4, snapshotNid: 7 },
          { position: 102, roomNid: roomB, stateKeyNid: name, eventNid: 5, prevEventNid: null, snapshotNid: 7 },
          { position: 103, roomNid: roomA, stateKeyNid: topic, eventNid: 6, prevEventNid: 1, snapshotNid: 7 },
        ]),
      );
      const keyOf = new Map([
        [topic, ['m.room.topic', '']],
        [alice, ['m.room.member', '@alice:hs']],
        [name, ['m.room.name', '']],
      ]);
      const all = await stateDeltasInRange(db(), { after: 100, upTo: 103 });
      assert.deepEqual(
        all.map((d) => [d.position, d.roomNid, d.stateKeyNid, d.eventNid, d.prevEventNid, d.type, d.stateKey, d.snapshotNid]),
        [
          [101, roomA, low, null, 4, ...keyOf.get(low)!, 7],
          [101, roomA, high, 3, 2, ...keyOf.get(high)!, 7],
          [102, roomB, name, 5, null, 'm.room.name', '', 7],
          [103, roomA, topic, 6, 1, 'm.room.topic', '', 7],
        ],
      );
      assert.deepEqual((await stateDeltasInRange(db(), { after: 99, upTo: 102 }, [roomB])).map((d) => d.position), [102]);
      assert.deepEqual((await stateDeltasInRange(db(), { after: 99, upTo: 102 }, [roomA])).map((d) => d.position), [100, 101, 101]);
      assert.deepEqual(await stateDeltasInRange(db(), { after: 0, upTo: 1000 }, []), []);
      assert.deepEqual(await stateDeltasInRange(db(), { after: 103, upTo: 1000 }), []);
    });

    test('latest positions only move forward; rooms without one are absent', async () => {
      assert.deepEqual(await latestPositions(db(), [roomA, roomB]), new Map());
      await setLatestPosition(db(), roomA, 10);
      await setLatestPosition(db(), roomA, 7);
      await setLatestPosition(db(), roomA, 12);
      assert.deepEqual(await latestPositions(db(), [roomA, roomB, 999]), new Map([[roomA, 12]]));
      await setLatestPosition(db(), roomB, 0);
      assert.deepEqual(await latestPositions(db(), [roomB]), new Map([[roomB, 0]]));
      assert.deepEqual(await latestPositions(db(), []), new Map());
    });

    test('backfill positions: negative, decreasing across calls, apart from the events stream', async () => {
      const events = await db().selectFrom('stream_positions').select('position').where('stream', '=', 'events').executeTakeFirst();
      assert.deepEqual(await db().transaction().execute((trx) => allocateBackfillPositions(trx, 3)), [-1, -2, -3]);
      assert.deepEqual(await db().transaction().execute((trx) => allocateBackfillPositions(trx, 1)), [-4]);
      assert.deepEqual(await allocateBackfillPositions(db(), 0), []);
      // A rolled-back allocation leaves no trace.
      await assert.rejects(
        db().transaction().execute(async (trx) => {
          await allocateBackfillPositions(trx, 5);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.deepEqual(await db().transaction().execute((trx) => allocateBackfillPositions(trx, 2)), [-5, -6]);
      const after = await db().selectFrom('stream_positions').select('position').where('stream', '=', 'events').executeTakeFirst();
      assert.deepEqual(after, events);
    });

    test('joined servers: counts adjusted per server, rows at 0 removed, each joined since its first join', async () => {
      const at = (position: number, entries: [string, number][]) => new Map(entries.map(([s, change]) => [s, { change, position }]));
      await db().transaction().execute((trx) => adjustJoinedServers(trx, roomA, at(10, [['hs', 2], ['remote.example', 1], ['zero.example', 0]])));
      await adjustJoinedServers(db(), roomB, at(11, [['hs', 1]]));
      assert.deepEqual(await joinedServers(db(), roomA), ['hs', 'remote.example']);
      await adjustJoinedServers(db(), roomA, at(12, [['hs', -1], ['remote.example', -1], ['other.example', 3], ['never.example', -1]]));
      assert.deepEqual(await joinedServers(db(), roomA), ['hs', 'other.example']);
      const rows = await db().selectFrom('room_joined_servers').select(['server_name', 'joined_members', 'joined_since']).where('room_nid', '=', roomA).orderBy('server_name').execute();
      assert.deepEqual(rows.map((r) => [r.server_name, r.joined_members, Number(r.joined_since)]), [
        ['hs', 1, 10],
        ['other.example', 3, 12],
      ]);
      await adjustJoinedServers(db(), roomA, at(13, [['hs', -1], ['other.example', -3]]));
      assert.deepEqual(await joinedServers(db(), roomA), []);
      assert.deepEqual(await joinedServers(db(), roomB), ['hs']);
      // Back after leaving: joined since the return.
      await adjustJoinedServers(db(), roomA, at(14, [['other.example', 1]]));
      const back = await db().selectFrom('room_joined_servers').select('joined_since').where('room_nid', '=', roomA).executeTakeFirst();
      assert.equal(Number(back?.joined_since), 14);
      await adjustJoinedServers(db(), roomA, at(15, [['other.example', -1]]));
      await adjustJoinedServers(db(), roomA, new Map());
    });

    test('statuses by id; redactions stored before their target, rejected ones left out', async () => {
      await addEvent({ id: '$soft', roomNid: roomB, status: 'soft_failed' });
      assert.deepEqual(
        await statusesOf(db(), ['$create', '$join', '$odd', '$soft', '$absent']),
        new Map<string, EventStatus>([
          ['$create', 'timeline'],
          ['$join', 'outlier'],
          ['$odd', 'rejected'],
          ['$soft', 'soft_failed'],
        ]),
      );
      assert.deepEqual(await statusesOf(db(), []), new Map());

      await addEvent({ id: '$redaction1', roomNid: roomB, type: 'm.room.redaction', redacts: '$late' });
      await addEvent({ id: '$redaction2', roomNid: roomB, type: 'm.room.redaction', redacts: '$late', status: 'rejected' });
      await addEvent({ id: '$redaction3', roomNid: roomB, type: 'm.room.redaction', redacts: '$late', status: 'outlier' });
      await addEvent({ id: '$redaction4', roomNid: roomB, type: 'm.room.redaction', redacts: '$other' });
      const found = await redactionsTargeting(db(), '$late');
      assert.deepEqual(found.map((r) => [r.event_id, r.status, r.room_id]), [
        ['$redaction1', 'timeline', '!b:hs'],
        ['$redaction3', 'outlier', '!b:hs'],
      ]);
      assert.deepEqual(await redactionsTargeting(db(), '$nothing'), []);
    });
  });
}
