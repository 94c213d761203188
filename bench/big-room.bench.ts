// A big room through the room server (service level): 10,000 members and 10,000 other state
// events, on a fresh SQLite database (or PostgreSQL with HEARTH_BENCH_POSTGRES=postgres://...).
// Prints the time to load its head into a process that has none of it cached, joins per second
// into it, the state snapshot rows written per state event, the event cache the head load used,
// the parsed events and heap one head keeps, and the peak RSS after each phase. The room is built
// through one room service, which is then dropped: loading and joining run in a second one, as in
// a server restarted with the room on disk. `npm run bench:big-room` runs it with the node options
// `npm start` gives the server, and --expose-gc to measure the heap a head keeps.
//
//   node --import tsx bench/big-room.bench.ts [members] [other-state-events] [joins]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { generateSigningKey } from '../src/protocol/signing.js';
import { loadRoomHead } from '../src/rooms/head-loader.js';
import { RoomService, type Actor } from '../src/rooms/service.js';
import { openDatabase } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { snapshotRowCount, StateKeyNids } from '../src/storage/rooms/state-snapshots.js';
import type { Schema } from '../src/storage/schema.js';
import { InProcessBus } from '../src/streams/in-process-bus.js';

const MEMBERS = Number(process.argv[2] ?? 10_000);
const OTHER_STATE = Number(process.argv[3] ?? 10_000);
const JOINS = Number(process.argv[4] ?? 1_000);
/** Concurrent senders while building the room (the writer batches what arrives together). */
const LANES = 10;
const SERVER = 'bench.test';

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
const connectionString = process.env['HEARTH_BENCH_POSTGRES'] ?? `file:${join(dir, 'hearth.db')}`;
const database = openDatabase<Schema>({ connectionString, maxOpenConns: 10 });
await migrateToLatest(database.db as never, database.dialect);
const signingKey = generateSigningKey();
const service = () => new RoomService({ db: database.db, dialect: database.dialect, serverName: SERVER, signingKey, notifier: new InProcessBus() });

const user = (n: number): Actor => ({ userId: `@user${n}:${SERVER}`, deviceId: 'BENCH' });
const owner = user(0);

/** Runs `count` calls of `fn(i)` over LANES concurrent loops. */
async function inLanes(count: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** Snapshot rows per state event since `before` (average and largest), with the events counted. */
async function snapshotRows(db: Kysely<Schema>, roomNid: number, before: { snapshots: number; entries: number; lastNid: number }) {
  const now = await snapshotRowCount(db, roomNid);
  const largest = await db
    .selectFrom('state_snapshot_entries as e')
    .innerJoin('state_snapshots as s', 's.snapshot_nid', 'e.snapshot_nid')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('s.room_nid', '=', roomNid)
    .where('s.snapshot_nid', '>', before.lastNid)
    .groupBy('e.snapshot_nid')
    .orderBy('n', 'desc')
    .limit(1)
    .executeTakeFirst();
  const snapshots = now.snapshots - before.snapshots;
  return { snapshots, average: (now.entries - before.entries) / snapshots, max: Number(largest?.n ?? 0) };
}

async function lastSnapshotNid(db: Kysely<Schema>): Promise<number> {
  const row = await db.selectFrom('state_snapshots').select((eb) => eb.fn.max('snapshot_nid').as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Wall and CPU milliseconds of `fn` (CPU time: this process's user + system; the machine may be busy). */
async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; wallMs: number; cpuMs: number }> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(cpu);
  return { result, wallMs: performance.now() - wall, cpuMs: (used.user + used.system) / 1000 };
}
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

// 1. Build the room: members join (public join rule), the owner sets custom state keys.
let started = performance.now();
// The builder service is dropped once built, as a server restarted with the room on disk.
const { roomId, roomNid } = await (async () => {
  const builder = service();
  const { roomId } = await builder.createRoom(owner, { preset: 'public_chat', name: 'big' });
  await inLanes(MEMBERS - 1, (i) => builder.join(user(i + 1), roomId));
  await inLanes(OTHER_STATE, (i) => builder.sendState(owner, roomId, 'bench.state', `key${i}`, { n: i, text: 'a little text in it' }));
  return { roomId, roomNid: (await builder.reader.roomInfo(roomId))!.nid };
})();
const empty = { snapshots: 0, entries: 0, lastNid: 0 };
const built = await snapshotRows(database.db, roomNid, empty);
console.log(`big room (${database.dialect}): ${fmt(MEMBERS)} members, ${fmt(OTHER_STATE)} other state events`);
console.log(`  built in ${fmt((performance.now() - started) / 1000, 1)} s`);
console.log(`  snapshot rows per state event while building: average ${fmt(built.average, 1)}, max ${fmt(built.max)} (${fmt(built.snapshots)} snapshots)`);
const peakRss = () => `${fmt(process.resourceUsage().maxRSS / 1024)} MiB`;
console.log(`  peak RSS while building: ${peakRss()}`);

// 2. Load its head as after a restart: a new room service over the same database.
const cold = service();
const cacheBefore = cold.reader.cacheUsage;
// Only the count is kept: the service loads its own head for the joins below.
const loadHead = async () => (await loadRoomHead(database.db, cold.reader, new StateKeyNids(), roomId))!.stateRefs.size;
const load = await timed(loadHead);
const cacheAfter = cold.reader.cacheUsage;
// Again in the same service (its code now compiled; the reader caches no head): the best of 5,
// as the machine may be busy.
let again = { wallMs: Infinity, cpuMs: Infinity };
for (let i = 0; i < 5; i++) {
  const t = await timed(loadHead);
  again = { wallMs: Math.min(again.wallMs, t.wallMs), cpuMs: Math.min(again.cpuMs, t.cpuMs) };
}
console.log(`  head load (cold): ${fmt(load.wallMs)} ms (CPU ${fmt(load.cpuMs)} ms) for ${fmt(load.result)} state entries`);
console.log(`  head load again, best of 5: ${fmt(again.wallMs)} ms (CPU ${fmt(again.cpuMs)} ms)`);
console.log(
  `  event cache used by the load: ${fmt(cacheAfter.events - cacheBefore.events)} events, ${fmt((cacheAfter.bytes - cacheBefore.bytes) / 1024 ** 2, 1)} MiB`,
);
// What one head holds: its parsed events, and the heap it keeps (measured when node runs with --expose-gc).
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const heapBefore = process.memoryUsage().heapUsed;
const kept = (await loadRoomHead(database.db, cold.reader, new StateKeyNids(), roomId))!;
gc?.();
const heapKept = process.memoryUsage().heapUsed - heapBefore;
console.log(
  `  head holds ${fmt(kept.stateRefs.size)} state references, ${fmt(kept.state.parsedCount)} parsed events` +
    (gc === undefined ? '' : `, ${fmt(heapKept / 1024 ** 2, 1)} MiB of heap`),
);
console.log(`  peak RSS so far: ${peakRss()}`);

// 3. Joins into it, through the same service (its first join loads the head: not counted).
const joiner = cold;
await joiner.join(user(MEMBERS), roomId);
const beforeJoins = { ...(await snapshotRowCount(database.db, roomNid)), lastNid: await lastSnapshotNid(database.db) };
const joins = await timed(async () => {
  for (let i = 1; i <= JOINS; i++) await joiner.join(user(MEMBERS + i), roomId);
});
const joined = await snapshotRows(database.db, roomNid, beforeJoins);
console.log(`  joins: ${fmt(JOINS / (joins.wallMs / 1000))}/s, CPU ${fmt((joins.cpuMs * 1000) / JOINS)} µs per join (${fmt(JOINS)} joins, one at a time)`);
console.log(`  snapshot rows per join: average ${fmt(joined.average, 1)}, max ${fmt(joined.max)}`);
console.log(`  peak RSS: ${peakRss()}`);

await database.close();
rmSync(dir, { recursive: true, force: true });
