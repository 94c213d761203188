// The floor of the sustained-load benchmark: the least a signed send can cost on this machine.
// It answers the benchmark's one request, PUT /_matrix/client/v3/rooms/{room}/send/{type}/{txn},
// with Hearth's HTTP stack (Fastify) and protocol core, and does only what no homeserver can skip:
// parse the body, check the bearer token, build a room-version-10 event citing the previous one,
// hash and sign it (hashAndSignEventWithId, as Hearth's builder does), and store it as one row in
// a SQLite file (WAL, synchronous = NORMAL), many sends to a transaction, answering after commit.
// No auth rules, transaction ids, state, edges, search, sync wake-ups or push.
//
// Hearth's sends per second over the floor's, on the same machine and load generator, is a
// figure that does not move with the machine's speed as raw sends per second do.
//
// Run by bench/sustained.bench.ts (BENCH_DATABASES=floor); prints "Listening on <url>".

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import Fastify from 'fastify';
import { hashAndSignEventWithId, type PduDraft } from '../../src/protocol/hashes.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey } from '../../src/protocol/signing.js';
import { FLOOR_TOKEN } from './server-child.js';

const SERVER = 'bench.test';
const SENDER = `@sender:${SERVER}`;
const VERSION = getRoomVersion('10')!;
// A message cites the create event, the power levels and the sender's membership.
const AUTH_EVENTS = ['$create', '$power_levels', '$member'];

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-floor-'));
const db = new BetterSqlite3(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('create table events (event_nid integer primary key, event_id text not null unique, txn_id text not null, json text not null)');
const insert = db.prepare('insert into events (event_id, txn_id, json) values (?, ?, ?)');

interface Pending {
  readonly eventId: string;
  readonly txnId: string;
  readonly json: string;
  readonly done: () => void;
}
let pending: Pending[] = [];
const commit = db.transaction((batch: readonly Pending[]) => {
  for (const p of batch) insert.run(p.eventId, p.txnId, p.json);
});
/** Group commit: what arrived during one turn of the event loop goes in one transaction. */
function flush(): void {
  const batch = pending;
  pending = [];
  commit(batch);
  for (const p of batch) p.done();
}

const key = generateSigningKey();
let previous = '$create';
let depth = 3;

const app = Fastify();
app.put<{ Params: { room: string; type: string; txn: string } }>('/_matrix/client/v3/rooms/:room/send/:type/:txn', async (request, reply) => {
  if (request.headers.authorization !== `Bearer ${FLOOR_TOKEN}`) return reply.code(401).send({ errcode: 'M_UNKNOWN_TOKEN', error: 'Unknown token' });
  const content = request.body;
  if (typeof content !== 'object' || content === null || Array.isArray(content)) return reply.code(400).send({ errcode: 'M_NOT_JSON', error: 'Not a JSON object' });
  const draft = {
    auth_events: AUTH_EVENTS,
    content,
    depth: ++depth,
    origin_server_ts: Date.now(),
    prev_events: [previous],
    room_id: request.params.room,
    sender: SENDER,
    type: request.params.type,
  } as PduDraft;
  const { pdu, eventId } = hashAndSignEventWithId(draft, SERVER, key, VERSION);
  previous = eventId;
  await new Promise<void>((done) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push({ eventId, txnId: request.params.txn, json: JSON.stringify(pdu), done });
  });
  return { event_id: eventId };
});

const url = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`Listening on ${url}`);
process.once('SIGTERM', () => {
  void app.close().then(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
