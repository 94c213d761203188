// Message search latency through HTTP (POST /search) over a large index, on SQLite and, when it
// is reachable, PostgreSQL (a database of its own, dropped after).
//
//   npm run bench:search [-- <messages> [<searches>]]      (default 1,000,000 messages, 200 searches)
//   BENCH_SEARCH_BACKENDS=sqlite (or postgres) runs one backend only.
//
// The fixture: the server (`hearth serve`, as npm start runs it) creates the user and 20 rooms
// over HTTP and is stopped; then the messages are written straight into the events table, in
// bulk, as the room server would have stored them (timeline events on the rooms' current state,
// on consecutive stream positions, the stream's position advanced), and indexed by the indexer's
// own functions (indexableAfter → documentsOf → indexDocuments, the consumer position stored),
// which is what the server's indexer runs batch by batch: the same index, built without HTTP.
// The server is started again on it and searched: words drawn log-uniformly from the vocabulary's
// ranks 20 to 20,000 (common to rare; message words follow Zipf's law), one or two words, 3 in 4
// by rank, 1 in 4 by recent, 10 results with counts and highlights.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import { openDatabase } from '../src/storage/database.js';
import type { Schema } from '../src/storage/schema.js';
import { claimConsumerPosition, saveConsumerPosition } from '../src/storage/streams.js';
import { indexableAfter, indexDocuments, textSearchConfig } from '../src/storage/search/event-search.js';
import { documentsOf } from '../src/rooms/search-service.js';
import { register } from './support/accounts.js';
import { rawClient } from './support/http-clients.js';
import { launchServer, percentile, stopServer, writeBenchConfig } from './support/server-child.js';

const MESSAGES = Number(process.argv[2] ?? 1_000_000);
const SEARCHES = Number(process.argv[3] ?? 200);
const ROOMS = 20;
const VOCABULARY = 20_000;
const PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BACKENDS = (process.env['BENCH_SEARCH_BACKENDS'] ?? 'sqlite,postgres').split(',');

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const row = (what: string, value: string) => console.log(`  ${what.padEnd(52)}  ${value}`);

/** A deterministic generator, so both backends get the same messages and searches. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pronounceable distinct words, one per rank. */
const SYLLABLES = ['ka', 'lo', 'mi', 'ner', 'tu', 'sa', 'vel', 'dor', 'pi', 'ren', 'sho', 'gal', 'fi', 'bru', 'zan', 'qui', 'wen', 'tor', 'ly', 'ham'];
const words = Array.from({ length: VOCABULARY }, (_, i) => {
  let w = '';
  let n = i + 1;
  while (n > 0) {
    w += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  }
  return w;
});

/** Zipf (s = 1) over the vocabulary's ranks, by inverting the cumulative distribution. */
function zipfSampler(rand: () => number): () => string {
  const cumulative = new Float64Array(VOCABULARY);
  let sum = 0;
  for (let i = 0; i < VOCABULARY; i++) cumulative[i] = sum += 1 / (i + 1);
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = VOCABULARY - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return words[lo]!;
  };
}

async function buildFixture(connectionString: string, dataDir: string): Promise<{ token: string; indexSeconds: number; loadSeconds: number }> {
  // 1. The user and the rooms, through the server.
  let server = await launchServer({ configPath: writeBenchConfig(dataDir, connectionString) });
  const call = rawClient(server.baseUrl);
  const user = await register(call, 'searcher');
  for (let i = 0; i < ROOMS; i++) {
    const r = await call('POST', '/_matrix/client/v3/createRoom', user.token, { name: `room ${i}`, preset: 'private_chat' });
    if (r.status !== 200) throw new Error(`createRoom: ${r.status}`);
  }
  await stopServer(server.child);

  // 2. The messages, in bulk, as the room server stores them.
  const database = openDatabase<Schema>({ connectionString, maxOpenConns: 2 });
  const { db, dialect } = database;
  try {
    const rooms = await db.selectFrom('rooms').select(['room_nid', 'room_id', 'state_snapshot_nid']).execute();
    const top = await db.selectFrom('events').select(({ fn }) => [fn.max('stream_ordering').as('p'), fn.max('depth').as('d')]).executeTakeFirstOrThrow();
    const first = Number(top.p) + 1;
    const depth0 = Number(top.d) + 1;
    const next = zipfSampler(random(42));
    const rand = random(7);
    let t = performance.now();
    const chunk = dialect === 'sqlite' ? 1500 : 1000;
    for (let i = 0; i < MESSAGES; i += chunk) {
      const rows = [];
      for (let j = i; j < Math.min(MESSAGES, i + chunk); j++) {
        const room = rooms[j % rooms.length]!;
        const length = 6 + Math.floor(rand() * 12);
        const body = Array.from({ length }, next).join(' ');
        const ts = 1_700_000_000_000 + j * 1000;
        const pdu = {
          auth_events: [],
          prev_events: [],
          type: 'm.room.message',
          room_id: room.room_id,
          sender: user.userId,
          content: { msgtype: 'm.text', body },
          depth: depth0 + j,
          origin_server_ts: ts,
          hashes: { sha256: 'bench' },
          signatures: {},
        };
        rows.push({
          event_id: `$bench${j}`,
          room_nid: Number(room.room_nid),
          type: 'm.room.message',
          state_key: null,
          sender: user.userId,
          origin_server_ts: ts,
          depth: depth0 + j,
          stream_ordering: first + j,
          status: 'timeline' as const,
          json: JSON.stringify(pdu),
          unsigned_json: null,
          redacts: null,
          redacted_by: null,
          rejection_reason: null,
          state_before_nid: room.state_snapshot_nid,
          state_after_nid: room.state_snapshot_nid,
          txn_device_id: null,
          txn_id: null,
        });
      }
      await db.insertInto('events').values(rows).execute();
    }
    const last = first + MESSAGES - 1;
    await db.updateTable('stream_positions').set({ position: last }).where('stream', '=', 'events').execute();
    for (const room of rooms) {
      const latest = await db.selectFrom('events').select(({ fn }) => fn.max('stream_ordering').as('p')).where('room_nid', '=', room.room_nid).executeTakeFirstOrThrow();
      await db.updateTable('rooms').set({ latest_position: Number(latest.p) }).where('room_nid', '=', room.room_nid).execute();
    }
    const loadSeconds = (performance.now() - t) / 1000;

    // 3. The index, by the indexer's own steps (its consumer then starts where this ended).
    t = performance.now();
    const config = textSearchConfig('en');
    const position = await claimConsumerPosition(db, 'search-index', 'events', 0, Date.now());
    let after = position.position;
    for (;;) {
      const batch = await indexableAfter(db, after, 5000);
      if (batch.length === 0) break;
      await indexDocuments(db, dialect, config, documentsOf(batch).docs);
      after = batch[batch.length - 1]!.position;
      await saveConsumerPosition(db, 'search-index', after, Date.now());
    }
    if (dialect === 'postgres') await sql`analyze`.execute(db);
    return { token: user.token, indexSeconds: (performance.now() - t) / 1000, loadSeconds };
  } finally {
    await database.close();
  }
}

async function measure(name: string, connectionString: string, dataDir: string): Promise<void> {
  console.log(`\nsearch over ${fmt(MESSAGES)} messages in ${ROOMS} rooms (${name})`);
  const { token, indexSeconds, loadSeconds } = await buildFixture(connectionString, dataDir);
  row('fixture: messages written / indexed', `${fmt(loadSeconds, 1)} s / ${fmt(indexSeconds, 1)} s`);
  const server = await launchServer({ configPath: writeBenchConfig(dataDir, connectionString) });
  try {
    const call = rawClient(server.baseUrl);
    const rand = random(99);
    const term = () => words[Math.floor(Math.exp(Math.log(20) + rand() * (Math.log(VOCABULARY) - Math.log(20)))) - 1]!;
    const searchOnce = async (i: number) => {
      const search_term = rand() < 0.7 ? term() : `${term()} ${term()}`;
      const order_by = i % 4 === 3 ? 'recent' : 'rank';
      const t = performance.now();
      const r = await call('POST', '/_matrix/client/v3/search', token, { search_categories: { room_events: { search_term, order_by } } });
      const ms = performance.now() - t;
      if (r.status !== 200) throw new Error(`search: HTTP ${r.status} ${JSON.stringify(r.body)}`);
      return { ms, count: (r.body['search_categories'] as { room_events: { count: number } }).room_events.count };
    };
    for (let i = 0; i < 10; i++) await searchOnce(i); // warm-up
    const times: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i < SEARCHES; i++) {
      const { ms, count } = await searchOnce(i);
      times.push(ms);
      counts.push(count);
    }
    times.sort((a, b) => a - b);
    counts.sort((a, b) => a - b);
    row(`${SEARCHES} searches: p50 / p99 / max`, `${fmt(times[Math.floor(times.length / 2)]!, 1)} / ${fmt(percentile(times, 99), 1)} / ${fmt(times.at(-1)!, 1)} ms`);
    row('matches per search: median / max', `${fmt(counts[Math.floor(counts.length / 2)]!)} / ${fmt(counts.at(-1)!)}`);
  } finally {
    await stopServer(server.child);
  }
}

if (BACKENDS.includes('sqlite')) {
  const sqliteDir = mkdtempSync(join(tmpdir(), 'hearth-bench-search-'));
  try {
    await measure('SQLite, FTS5', `file:${join(sqliteDir, 'hearth.db')}`, sqliteDir);
  } finally {
    rmSync(sqliteDir, { recursive: true, force: true });
  }
}

const admin = new pg.Client({ connectionString: PG_URL });
const reachable = BACKENDS.includes('postgres') && (await admin.connect().then(
  () => true,
  (err: unknown) => {
    console.log(`\nPostgreSQL not reachable at ${PG_URL} (${String(err)}): skipped`);
    return false;
  },
));
if (reachable) {
  const name = `hearth_bench_search_${process.pid}`;
  const pgDir = mkdtempSync(join(tmpdir(), 'hearth-bench-search-'));
  await admin.query(`create database ${name}`);
  try {
    await measure('PostgreSQL, tsvector + GIN', `postgres://postgres@127.0.0.1:5432/${name}`, pgDir);
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    rmSync(pgDir, { recursive: true, force: true });
  }
}
