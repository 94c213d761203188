// Sends per second through the room server (service level: build, sign, authorize, store, notify),
// on a fresh SQLite database (or PostgreSQL with HEARTH_BENCH_POSTGRES=postgres://...):
// one sender and 10 concurrent senders, into one room and into 10 rooms.
//
//   node --import tsx bench/rooms-send.bench.ts [sends-per-case]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSigningKey } from '../src/protocol/signing.js';
import { RoomService, type Actor } from '../src/rooms/service.js';
import { openDatabase } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import type { Schema } from '../src/storage/schema.js';
import { InProcessBus } from '../src/streams/in-process-bus.js';

const SENDS = Number(process.argv[2] ?? 5000);
const SERVER = 'bench.test';

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
const connectionString = process.env['HEARTH_BENCH_POSTGRES'] ?? `file:${join(dir, 'hearth.db')}`;
const database = openDatabase<Schema>({ connectionString, maxOpenConns: 10 });
await migrateToLatest(database.db as never, database.dialect);
const rooms = new RoomService({
  db: database.db,
  dialect: database.dialect,
  serverName: SERVER,
  signingKey: generateSigningKey(),
  notifier: new InProcessBus(),
});

const senders: Actor[] = Array.from({ length: 10 }, (_, i) => ({ userId: `@sender${i}:${SERVER}`, deviceId: 'BENCH' }));
const owner = senders[0]!;
let txn = 0;

async function publicRoom(): Promise<string> {
  const { roomId } = await rooms.createRoom(owner, { preset: 'public_chat', name: 'bench' });
  for (const s of senders.slice(1)) await rooms.join(s, roomId);
  return roomId;
}

function send(sender: Actor, roomId: string): Promise<string> {
  txn++;
  return rooms.sendMessage(sender, roomId, 'm.room.message', { msgtype: 'm.text', body: `message ${txn} with a little text in it` }, `t${txn}`);
}

interface Result {
  readonly perSecond: number;
  /** CPU time of this process per send (user + system), in microseconds. */
  readonly cpuMicros: number;
}

/** Runs `total` sends over `lanes` concurrent loops; lane i sends as `senderOf(i)` into `roomOf(i, n)`. */
async function run(lanes: number, total: number, senderOf: (lane: number) => Actor, roomOf: (lane: number, n: number) => string): Promise<Result> {
  const perLane = Math.ceil(total / lanes);
  const start = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let n = 0; n < perLane; n++) await send(senderOf(lane), roomOf(lane, n));
    }),
  );
  const used = process.cpuUsage(cpu);
  const sends = perLane * lanes;
  return { perSecond: sends / ((performance.now() - start) / 1000), cpuMicros: (used.user + used.system) / sends };
}

const one = await publicRoom();
const ten = await Promise.all(Array.from({ length: 10 }, () => publicRoom()));
// Warm up: JIT, caches, the rooms' heads.
await run(10, 1000, (l) => senders[l]!, (l) => ten[l]!);
await run(1, 500, () => owner, () => one);

const cases: [string, () => Promise<Result>][] = [
  ['1 sender, 1 room', () => run(1, SENDS, () => owner, () => one)],
  ['10 senders, 1 room', () => run(10, SENDS, (l) => senders[l]!, () => one)],
  ['1 sender, 10 rooms', () => run(1, SENDS, () => owner, (_, n) => ten[n % 10]!)],
  ['10 senders, 10 rooms', () => run(10, SENDS, (l) => senders[l]!, (l) => ten[l]!)],
];
console.log(`room server sends (${database.dialect}, ${SENDS} sends per case)`);
console.log(`  ${'case'.padEnd(22)} ${'sends/s'.padStart(8)} ${'CPU µs/send'.padStart(12)}`);
for (const [name, fn] of cases) {
  const r = await fn();
  console.log(`  ${name.padEnd(22)} ${Math.round(r.perSecond).toLocaleString('en-US').padStart(8)} ${Math.round(r.cpuMicros).toString().padStart(12)}`);
}

await database.close();
rmSync(dir, { recursive: true, force: true });
