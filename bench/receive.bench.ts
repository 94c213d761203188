// Events received from another server, accepted per second: PDUs delivered as a /send transaction
// delivers them (batches of 50), each one checked on receipt (format, signatures, content hash,
// auth events, state before, current state) and stored. Into one room, then spread over 100
// rooms. The PDUs are built and signed by a fake remote server before the clock starts. On a fresh
// SQLite database (or PostgreSQL with HEARTH_BENCH_POSTGRES=postgres://...). Prints figures,
// asserts nothing.
//
//   npm run bench:receive -- [pdus] [rooms]   (with the node options npm start gives the server)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Pdu } from '../src/protocol/events.js';
import { getRoomVersion } from '../src/protocol/room-versions.js';
import { generateSigningKey } from '../src/protocol/signing.js';
import { RoomService, type Actor } from '../src/rooms/service.js';
import { openDatabase } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import type { Schema } from '../src/storage/schema.js';
import { InProcessBus } from '../src/streams/in-process-bus.js';
import { RemoteServer, RoomGraph } from '../test/support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../test/support/remote-ports.js';

const PDUS = Number(process.argv[2] ?? 5000);
const ROOMS = Number(process.argv[3] ?? 100);
const BATCH = 50;
const SERVER = 'bench.test';
const BOB = '@bob:remote.test';
const VERSION = getRoomVersion('10')!;

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
const connectionString = process.env['HEARTH_BENCH_POSTGRES'] ?? `file:${join(dir, 'hearth.db')}`;
const database = openDatabase<Schema>({ connectionString, maxOpenConns: 8 });
const db = database.db;
await migrateToLatest(db as never, database.dialect);
const remote = new RemoteServer({ serverName: 'remote.test' });
const rooms = new RoomService({
  db,
  dialect: database.dialect,
  serverName: SERVER,
  signingKey: generateSigningKey(),
  notifier: new InProcessBus(),
  keyRing: keyRingOf(remote),
  remoteEvents: remoteEventsOf(remote),
});
const owner: Actor = { userId: `@owner:${SERVER}`, deviceId: 'BENCH' };

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50);

/** A public room of this server's with bob of the remote joined; the remote's graph of it. */
async function roomWithBob(): Promise<RoomGraph> {
  const { roomId } = await rooms.createRoom(owner, { preset: 'public_chat' });
  const g = new RoomGraph(roomId, VERSION, [remote]);
  const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
    where r.room_id = ${roomId} order by e.stream_ordering`.execute(db);
  for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
  const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
  const [outcome] = await rooms.receive('remote.test', [join.pdu]);
  if (outcome!.status !== 'timeline') throw new Error(`bob's join: ${outcome!.status} ${outcome!.reason ?? ''}`);
  return g;
}

async function run(label: string, graphs: readonly RoomGraph[]): Promise<void> {
  const pdus: Pdu[] = [];
  for (let i = 0; i < PDUS; i++) {
    const g = graphs[i % graphs.length]!;
    pdus.push(g.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: `message ${i} ${'x'.repeat(100)}` } }).pdu);
  }
  const cpu = process.cpuUsage();
  const started = performance.now();
  let accepted = 0;
  for (let i = 0; i < pdus.length; i += BATCH) {
    for (const o of await rooms.receive('remote.test', pdus.slice(i, i + BATCH))) if (o.status === 'timeline') accepted++;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1e6;
  console.log(
    `${label.padEnd(28)} ${accepted}/${PDUS} accepted in ${seconds.toFixed(2)} s: ${Math.round(accepted / seconds).toLocaleString('en')} PDUs/s ` +
      `(${Math.round(accepted / cpuSeconds).toLocaleString('en')} per CPU-second)`,
  );
}

console.log(`${database.dialect}, ${PDUS} PDUs in batches of ${BATCH}`);
await run('one room', [await roomWithBob()]);
const many: RoomGraph[] = [];
for (let i = 0; i < ROOMS; i++) many.push(await roomWithBob());
await run(`${ROOMS} rooms`, many);
clearInterval(sampler);
console.log(`peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MB (this process: the fake remote's graphs and the PDUs built ahead included)`);
await database.close();
rmSync(dir, { recursive: true, force: true });
