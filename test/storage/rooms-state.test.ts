import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Kysely } from 'kysely';
import { parseStateKey, stateKey, type StateKey } from '../../src/protocol/events.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { insertRoom } from '../../src/storage/rooms/rooms.js';
import {
  insertSnapshotEntries,
  insertSnapshotRow,
  planSnapshot,
  readSnapshot,
  readSnapshotState,
  readSnapshotSubset,
  snapshotRowCount,
  STATE_CHAIN_LIMIT,
  StateKeyNids,
  type SnapshotInfo,
} from '../../src/storage/rooms/state-snapshots.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';

/** A written snapshot as planSnapshot weighs it. */
interface Link {
  readonly parent: Link | null;
  readonly keys: readonly StateKey[];
  readonly chainLength: number;
  readonly info: SnapshotInfo;
}

/**
 * Writes a sequence of state changes the way the room server does, in the form planSnapshot
 * picks: a delta's keys hold their current events (a removed key: a removal entry). Returns each
 * snapshot with the state it must hold and the entries it wrote.
 */
async function writeChanges(
  db: Kysely<Schema>,
  roomNid: number,
  keys: StateKeyNids,
  changes: readonly { type: string; key: string; eventNid: number | null }[],
): Promise<{ info: SnapshotInfo; expected: Map<StateKey, number>; entries: number }[]> {
  const out: { info: SnapshotInfo; expected: Map<StateKey, number>; entries: number }[] = [];
  let current: Link | null = null;
  const state = new Map<StateKey, number>();
  const nidOf = new Map<StateKey, number>();
  for (const c of changes) {
    const k = stateKey(c.type, c.key);
    await db.transaction().execute(async (trx) => {
      nidOf.set(k, await keys.getOrCreate(trx, c.type, c.key));
      if (c.eventNid === null) state.delete(k);
      else state.set(k, c.eventNid);
      const plan = planSnapshot(current, [k], state.size);
      const info: SnapshotInfo = await insertSnapshotRow(trx, roomNid, plan.parent?.info ?? null);
      const written = plan.parent === null ? [...state.keys()] : plan.keys;
      await insertSnapshotEntries(trx, info.nid, written.map((sk) => [nidOf.get(sk)!, state.get(sk) ?? null]));
      current = { parent: plan.parent, keys: written, chainLength: info.chainLength, info };
      out.push({ info, expected: new Map(state), entries: written.length });
    });
  }
  return out;
}

for (const backend of await storageBackends()) {
  describe(`room state snapshots on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let roomCounter = 0;
    const newRoom = () =>
      insertRoom(database.db, { roomId: `!r${++roomCounter}:hs`, version: '10', creator: '@a:hs', createdTs: 0, isPublic: false });

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
      await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('every snapshot of a delta chain reads back its full state, across full-snapshot restarts', async () => {
      const roomNid = await newRoom();
      const keys = new StateKeyNids();
      const changes = Array.from({ length: 80 }, (_, i) => ({
        type: i % 3 === 0 ? 'm.room.member' : 'm.room.name',
        key: i % 3 === 0 ? `@u${i % 11}:hs` : '',
        eventNid: 1000 + i,
      }));
      const written = await writeChanges(database.db, roomNid, keys, changes);
      for (const { info, expected } of written) {
        assert.ok(info.chainLength <= STATE_CHAIN_LIMIT, `chain of ${info.chainLength}`);
        assert.equal(info.chain.length, info.chainLength + 1);
        assert.deepEqual(await readSnapshot(database.db, info.nid), expected);
      }
      // Only the entries each snapshot was planned with were written.
      const counts = await snapshotRowCount(database.db, roomNid);
      assert.equal(counts.snapshots, 80);
      assert.equal(counts.entries, written.reduce((n, w) => n + w.entries, 0));
    });

    test('a room with thousands of state keys writes a bounded number of rows per state event', async () => {
      const roomNid = await newRoom();
      const keys = new StateKeyNids();
      // 1,000 members joining, with changes to earlier ones, some leaving the state (removals).
      const changes: { type: string; key: string; eventNid: number | null }[] = [];
      for (let i = 0; i < 1000; i++) {
        changes.push({ type: 'm.room.member', key: `@u${i}:hs`, eventNid: 10_000 + i });
        if (i % 5 === 4) changes.push({ type: 'm.room.member', key: `@u${Math.floor(i / 3)}:hs`, eventNid: 20_000 + i });
        if (i % 50 === 49) changes.push({ type: 'm.room.member', key: `@u${i - 20}:hs`, eventNid: null });
      }
      const written = await writeChanges(database.db, roomNid, keys, changes);
      const counts = await snapshotRowCount(database.db, roomNid);
      assert.equal(counts.snapshots, changes.length);
      // A full snapshot every 33 state events would write about 15 rows per state event here, and
      // a hundred times that at 100,000 keys; the chain's deltas keep it near log2 of the changes.
      const perEvent = counts.entries / counts.snapshots;
      assert.ok(perEvent < 12, `${perEvent} rows per state event`);
      assert.ok(Math.max(...written.map((w) => w.info.chainLength)) <= 16);
      // Reads see every change, removals included (@u979 left last).
      const n = written.length;
      const sample = [n - 1, n - 2, n >> 1, (n >> 1) + 1, Math.floor(n * 0.8), 300];
      for (const i of sample) assert.deepEqual(await readSnapshot(database.db, written[i]!.info.nid), written[i]!.expected);
      const last = written[written.length - 1]!;
      const members = ['@u1:hs', '@u979:hs', '@u999:hs', '@u9999:hs'];
      const subset = await readSnapshotSubset(database.db, last.info.nid, 'm.room.member', members);
      const expected = new Map(members.flatMap((m) => {
        const nid = last.expected.get(stateKey('m.room.member', m));
        return nid === undefined ? [] : [[stateKey('m.room.member', m), nid] as const];
      }));
      assert.deepEqual(subset, expected);
      assert.ok(!last.expected.has(stateKey('m.room.member', '@u979:hs')));
    });

    test('a chain written before planSnapshot (32 one-entry deltas on a base) reads back and grows by plan', async () => {
      const roomNid = await newRoom();
      const keys = new StateKeyNids();
      const state = new Map<StateKey, number>();
      // A full snapshot of 200 members, then a delta per change.
      let info: SnapshotInfo | null = await database.db.transaction().execute(async (trx) => {
        const base = await insertSnapshotRow(trx, roomNid, null);
        const entries: [number, number][] = [];
        for (let i = 0; i < 200; i++) {
          entries.push([await keys.getOrCreate(trx, 'm.room.member', `@b${i}:hs`), 5000 + i]);
          state.set(stateKey('m.room.member', `@b${i}:hs`), 5000 + i);
        }
        await insertSnapshotEntries(trx, base.nid, entries);
        return base;
      });
      for (let i = 1; i <= STATE_CHAIN_LIMIT; i++) {
        const type = 'm.room.member';
        const key = `@u${i % 20}:hs`;
        await database.db.transaction().execute(async (trx) => {
          const keyNid = await keys.getOrCreate(trx, type, key);
          state.set(stateKey(type, key), 100 + i);
          info = await insertSnapshotRow(trx, roomNid, info);
          await insertSnapshotEntries(trx, info.nid, [[keyNid, 100 + i]]);
        });
      }
      const old = await readSnapshotState(database.db, info!.nid);
      assert.deepEqual(old.events, state);
      assert.equal(old.layers.length, STATE_CHAIN_LIMIT + 1);
      // As a loaded head holds it: one link per snapshot of the chain.
      let link: Link | null = null;
      for (const [i, nid] of old.info.chain.entries()) {
        link = { parent: link, keys: old.layers[i]!, chainLength: i, info: { nid, chainLength: i, chain: old.info.chain.slice(0, i + 1) } };
      }
      const change = stateKey('m.room.member', '@u3:hs');
      const plan = planSnapshot(link, [change], state.size);
      // The new delta takes in the small deltas before it instead of lengthening the chain.
      assert.ok(plan.parent !== null);
      assert.equal(plan.parent.chainLength, 0);
      assert.equal(plan.keys.length, 20);
      await database.db.transaction().execute(async (trx) => {
        state.set(change, 999);
        const next = await insertSnapshotRow(trx, roomNid, plan.parent.info);
        await insertSnapshotEntries(trx, next.nid, plan.keys.map((k) => [old.keyNids.get(k)!, state.get(k)!]));
        assert.deepEqual(await readSnapshot(trx, next.nid), state);
      });
    });

    test('a removal entry hides the inherited one; a subset read sees the same', async () => {
      const roomNid = await newRoom();
      const keys = new StateKeyNids();
      const written = await writeChanges(database.db, roomNid, keys, [
        { type: 'm.room.member', key: '@a:hs', eventNid: 1 },
        { type: 'm.room.member', key: '@b:hs', eventNid: 2 },
        { type: 'm.room.member', key: '@a:hs', eventNid: null },
        { type: 'm.room.member', key: '@b:hs', eventNid: 3 },
      ]);
      const last = written[written.length - 1]!;
      assert.deepEqual(await readSnapshot(database.db, last.info.nid), new Map([[stateKey('m.room.member', '@b:hs'), 3]]));
      assert.deepEqual(
        await readSnapshotSubset(database.db, last.info.nid, 'm.room.member', ['@a:hs', '@b:hs', '@c:hs']),
        new Map([[stateKey('m.room.member', '@b:hs'), 3]]),
      );
      assert.deepEqual(
        await readSnapshotSubset(database.db, written[1]!.info.nid, 'm.room.member', ['@a:hs']),
        new Map([[stateKey('m.room.member', '@a:hs'), 1]]),
      );
    });

    test('state key ids are shared across rooms and stable', async () => {
      const keys = new StateKeyNids();
      const a = await keys.getOrCreate(database.db, 'm.room.topic', '');
      const again = await new StateKeyNids().getOrCreate(database.db, 'm.room.topic', '');
      assert.equal(a, again);
      assert.notEqual(await keys.getOrCreate(database.db, 'm.room.topic', 'x'), a);
      assert.equal(keys.cached(stateKey('m.room.topic', '')), a);
    });

    test('state key ids resolved many at once: new ones created, known ones found, the same as one at a time', async () => {
      const known = await new StateKeyNids().getOrCreate(database.db, 'm.room.member', '@known:hs');
      const keys = new StateKeyNids();
      const wanted = [stateKey('m.room.member', '@known:hs'), stateKey('m.room.member', '@new1:hs'), stateKey('x.type', 'new'), stateKey('m.room.member', '@new1:hs')];
      await database.db.transaction().execute((trx) => keys.resolve(trx, wanted));
      assert.equal(keys.cached(wanted[0]!), known);
      const others = new StateKeyNids();
      for (const k of wanted) {
        const { type, stateKey: key } = parseStateKey(k);
        assert.equal(await others.getOrCreate(database.db, type, key), keys.cached(k));
      }
      assert.equal(new Set(wanted.map((k) => keys.cached(k))).size, 3);
    });

    test('property: any sequence of changes reads back as the map it built', async () => {
      const keyNids = new StateKeyNids();
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              type: fc.constantFrom('m.room.member', 'm.room.name', 'x.custom'),
              key: fc.constantFrom('', '@a:hs', '@b:hs', 'k'),
              eventNid: fc.option(fc.integer({ min: 1, max: 10_000 }), { freq: 5 }),
            }),
            { minLength: 1, maxLength: 70 },
          ),
          async (changes) => {
            const roomNid = await newRoom();
            const written = await writeChanges(database.db, roomNid, keyNids, changes);
            // Reading the last and a middle snapshot is enough to catch a wrong merge order.
            for (const w of [written[written.length - 1]!, written[Math.floor(written.length / 2)]!]) {
              assert.deepEqual(await readSnapshot(database.db, w.info.nid), w.expected);
            }
          },
        ),
        { numRuns: 15 },
      );
    });
  });
}
