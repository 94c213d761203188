// Inbound federation through HTTP: another server's PDUs pushed with PUT /_matrix/federation/v1/send
// in transactions of 50, one transaction at a time as a sending server does, each request's X-Matrix
// signature checked and each PDU checked on receipt (format, signatures, hash, auth, state) and
// stored, into one room of a fresh server (SQLite, in this process). The PDUs are built and signed
// by a fake remote before the clock starts. Prints figures, asserts nothing.
//
//   npm run bench:federation -- [pdus]

import type { Pdu } from '../src/protocol/events.js';
import type { JsonObject } from '../src/protocol/json.js';
import { requestAuthorization } from '../src/protocol/request-auth.js';
import { getRoomVersion } from '../src/protocol/room-versions.js';
import { RemoteServer, RoomGraph } from '../test/support/remote-server.js';
import { startTestServer } from '../test/support/server.js';

const PDUS = Number(process.argv[2] ?? 5000);
const BATCH = 50;
const SERVER = 'bench.test';
const REMOTE = 'remote.test';
const BOB = `@bob:${REMOTE}`;
const VERSION = getRoomVersion('10')!;

const hs = await startTestServer({ serverName: SERVER });
const remote = new RemoteServer({ serverName: REMOTE });
// The remote's key, as the key ring would have fetched it.
hs.server.services.keyRing.add(REMOTE, remote.signingKey.keyId, { publicKey: remote.signingKey.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
const owner = await hs.registerUser('owner', 'owner-password');

let txn = 0;
/** One transaction, signed as the remote signs it; returns how many PDUs were accepted. */
async function send(pdus: readonly Pdu[]): Promise<number> {
  const uri = `/_matrix/federation/v1/send/t${txn++}`;
  const content = { origin: REMOTE, origin_server_ts: Date.now(), pdus } as unknown as JsonObject;
  const authorization = requestAuthorization('X-Matrix', { method: 'PUT', uri, origin: REMOTE, destination: SERVER, content }, remote.signingKey);
  const res = await fetch(`${hs.baseUrl}${uri}`, { method: 'PUT', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(content) });
  const body = (await res.json()) as { pdus?: Record<string, { error?: string }> };
  if (res.status !== 200) throw new Error(`send answered ${res.status}: ${JSON.stringify(body)}`);
  return Object.values(body.pdus ?? {}).filter((r) => r.error === undefined).length;
}

// A public room of the server's, with bob of the remote joined through a transaction.
const { roomId } = await hs.server.services.rooms.createRoom({ userId: owner.userId, deviceId: owner.deviceId }, { preset: 'public_chat' });
const graph = new RoomGraph(roomId, VERSION, [remote]);
const rows = await hs.server.core.db
  .selectFrom('events as e')
  .innerJoin('rooms as r', 'r.room_nid', 'e.room_nid')
  .select('e.json')
  .where('r.room_id', '=', roomId)
  .orderBy('e.stream_ordering')
  .execute();
for (const r of rows) await graph.insert(JSON.parse(r.json) as Pdu);
if ((await send([graph.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } }).pdu])) !== 1) throw new Error("bob's join was not accepted");

const pdus: Pdu[] = [];
for (let i = 0; i < PDUS; i++) pdus.push(graph.eventSync({ type: 'm.room.message', sender: BOB, content: { msgtype: 'm.text', body: `message ${i} ${'x'.repeat(100)}` } }).pdu);

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50);
const latencies: number[] = [];
const cpu = process.cpuUsage();
const started = performance.now();
let accepted = 0;
for (let i = 0; i < pdus.length; i += BATCH) {
  const t = performance.now();
  accepted += await send(pdus.slice(i, i + BATCH));
  latencies.push(performance.now() - t);
}
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
clearInterval(sampler);
latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1);
console.log(`SQLite, ${PDUS} PDUs into one room in transactions of ${BATCH}, one at a time, through HTTP (server and sender in one process)`);
console.log(
  `  ${accepted}/${PDUS} accepted in ${seconds.toFixed(2)} s: ${Math.round(accepted / seconds).toLocaleString('en')} PDUs/s ` +
    `(${Math.round(accepted / ((used.user + used.system) / 1e6)).toLocaleString('en')} per CPU-second); per transaction p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`,
);
console.log(`  peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MB (the fake remote's graph and the PDUs built ahead included)`);
await hs.close();
