// Sustained load on the write path: a fresh server per database (SQLite in a temp folder, then a
// PostgreSQL database created for the run and dropped after it), one user, one room, and message
// sends (PUT /rooms/{room}/send/m.room.message/{txn}) for a fixed time over 1, 10 and 50
// concurrent keep-alive connections. Per case it prints throughput, latency p50/p99/max, the count
// of requests over 50 ms, the event-loop stalls over 50 ms the server saw, and the server's peak
// RSS. Prints a table and never asserts: `npm run bench:sustained`.
//
//   BENCH_SECONDS=10 npm run bench:sustained
//
// Environment: BENCH_SECONDS (per case, default 60), BENCH_CONNECTIONS (default 1,10,50),
// BENCH_DATABASES (default sqlite,postgres; add floor for the floor server, see below), BENCH_ENTRY (another build's entry script, e.g. to
// compare with an earlier commit built elsewhere), BENCH_CONFIG (JSON merged over the server's
// configuration, see bench/support/server-child.ts), BENCH_NODE_FLAGS (more node options for the
// server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), HEARTH_TEST_POSTGRES (the PostgreSQL server's admin
// URL, default postgres://postgres@127.0.0.1:5432/postgres; PostgreSQL is skipped when it does not
// answer). On PostgreSQL the table also gives the most connections the server held open, sampled
// from pg_stat_activity every 100 ms.
//
// The server is a child process started as `npm start` starts it: dist/cli.js with the start
// script's node options (built first when older than the sources; see bench/support/server-child.ts),
// so its RSS is the server's alone and not the load generator's or a TypeScript loader's. It also
// preloads bench/support/loop-stalls.mjs, a 5 ms timer that counts how often the event loop was
// more than 50 ms late (and notes the longest garbage-collection pause): that tells a stall of the
// server apart from a slow client or a busy machine.
//
// The load generator is another child process (bench/support/load-generator.ts: the minimal
// keep-alive HTTP/1.1 client of bench/support/http-clients.ts, about half the CPU per request of
// node:http), so it does not share a thread with the server or with this process, which samples
// the server's RSS every 50 ms and reads its peak (VmHWM, reset before each case through
// /proc/<pid>/clear_refs) at the end of each case.
//
// `floor` in BENCH_DATABASES runs the same cases against bench/support/floor-server.ts, which does
// only what no signed send can skip (Fastify, hash and sign, one row in a group commit), and prints
// each database's sends per second as a share of the floor's: a figure that moves less with the
// machine's speed than raw sends per second (under tsx, so its RSS is not comparable).

import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createPostgresDatabase, postgresUnavailable, type TestDatabase } from '../test/support/databases.js';
import { ok, register } from './support/accounts.js';
import { rawClient } from './support/http-clients.js';
import type { LoadOrder, LoadReport } from './support/load-generator.js';
import { FLOOR_TOKEN, launchFloor, launchServer, percentile, procStatusKb, stopServer, writeBenchConfig, type LaunchedServer } from './support/server-child.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 60);
const CONNECTIONS = (process.env['BENCH_CONNECTIONS'] ?? '1,10,50').split(',').map(Number);
const DATABASES = (process.env['BENCH_DATABASES'] ?? 'sqlite,postgres').split(',');
// Long enough for the JIT to optimize the send path on both sides.
const WARM_UP_SECONDS = Math.min(5, SECONDS);
const SLOW_MS = 50;
const NODE_FLAGS = (process.env['BENCH_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
const ENTRY = process.env['BENCH_ENTRY'] === undefined ? undefined : resolve(process.env['BENCH_ENTRY']);

interface LoopStalls {
  readonly seq: number;
  readonly stalls: number;
  readonly worstMs: number;
  readonly worstGcMs: number;
  readonly p99Ms: number;
}

interface CaseResult {
  readonly connections: number;
  readonly report: LoadReport;
  readonly loop: LoopStalls;
  readonly peakRssMb: number;
  /** PostgreSQL: the most connections the server held open during the case. */
  readonly dbConnections: number | undefined;
}

/** Runs the load generator in a process of its own and waits for its report. */
function generateLoad(order: LoadOrder): Promise<LoadReport> {
  return new Promise((done, fail) => {
    const child = fork(new URL('./support/load-generator.ts', import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'] });
    child.once('message', (report) => done(report as LoadReport));
    child.once('error', fail);
    child.once('exit', (code) => code !== 0 && fail(new Error(`the load generator exited with ${code}`)));
    child.send(order);
  });
}

/** Asks the server's stall watcher for what it saw since the last ask (and to start afresh). */
async function loopStalls(server: LaunchedServer, file: string, last: number): Promise<LoopStalls> {
  server.child.kill('SIGUSR2');
  for (let i = 0; i < 200; i++) {
    await sleep(10);
    try {
      const seen = JSON.parse(readFileSync(file, 'utf8')) as LoopStalls;
      if (seen.seq > last) return seen;
    } catch {
      // Not written yet, or caught mid-write.
    }
  }
  throw new Error('the server did not report its event-loop stalls');
}

/** Resets the process's peak RSS (VmHWM); false when the kernel does not let us. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The most connections the server held open to a PostgreSQL database, sampled every 100 ms. */
async function watchConnections(connectionString: string): Promise<{ stop(): Promise<number> }> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  let peak = 0;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const r = await client.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
      peak = Math.max(peak, r.rows[0]!.n);
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await sampling;
      await client.end();
      return peak;
    },
  };
}

/** `connectionString` undefined: a SQLite file in the server's data folder. */
async function runDatabase(name: string, postgres: string | undefined): Promise<{ how: string; results: CaseResult[]; peakReset: boolean }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-sustained-'));
  const connectionString = postgres ?? `file:${join(dataDir, 'hearth.db')}`;
  const loopFile = join(dataDir, 'loop-stalls.json');
  process.env['HEARTH_BENCH_LOOP_FILE'] = loopFile;
  const nodeFlags = ['--import', pathToFileURL(new URL('./support/loop-stalls.mjs', import.meta.url).pathname).href, ...NODE_FLAGS];
  const server =
    name === 'floor'
      ? await launchFloor({ nodeFlags })
      : await launchServer({ configPath: writeBenchConfig(dataDir, connectionString), ...(ENTRY !== undefined ? { entry: ENTRY } : {}), nodeFlags });
  const pid = server.child.pid!;
  try {
    let token = FLOOR_TOKEN;
    let roomId = '!floor:bench.test';
    if (name !== 'floor') {
      const call = rawClient(server.baseUrl);
      const user = await register(call, 'sender');
      const created = await ok(call('POST', '/_matrix/client/v3/createRoom', user.token, { preset: 'public_chat', name: 'bench' }), 'createRoom');
      token = user.token;
      roomId = created['room_id'] as string;
    }
    const order = (connections: number, seconds: number, txnPrefix: string): LoadOrder => ({
      baseUrl: server.baseUrl,
      token,
      roomId,
      connections,
      seconds,
      txnPrefix,
    });

    await generateLoad(order(10, WARM_UP_SECONDS, 'w'));
    let seq = (await loopStalls(server, loopFile, 0)).seq;
    const results: CaseResult[] = [];
    let peakReset = true;
    for (const [i, connections] of CONNECTIONS.entries()) {
      peakReset &&= resetPeakRss(pid);
      let sampledKb = procStatusKb(pid, 'VmRSS');
      const sampler = setInterval(() => (sampledKb = Math.max(sampledKb, procStatusKb(pid, 'VmRSS'))), 50);
      const watcher = postgres === undefined ? undefined : await watchConnections(postgres);
      // Transaction ids of their own per case: a repeated id is answered from the first send, not sent.
      const report = await generateLoad(order(connections, SECONDS, `c${i}x${connections}-`));
      clearInterval(sampler);
      const dbConnections = await watcher?.stop();
      const loop = await loopStalls(server, loopFile, seq);
      seq = loop.seq;
      const peakKb = peakReset ? Math.max(sampledKb, procStatusKb(pid, 'VmHWM')) : sampledKb;
      if (report.failed > 0) console.log(`  ${name}, ${connections} connections: ${report.failed} requests failed, the first: ${report.failure}`);
      results.push({ connections, report, loop, peakRssMb: peakKb / 1024, dbConnections });
    }
    return { how: server.how, results, peakReset };
  } finally {
    await stopServer(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function printTable(name: string, how: string, results: readonly CaseResult[], peakReset: boolean): void {
  console.log(`\n${name} (server: ${how}; ${SECONDS} s per case after a ${WARM_UP_SECONDS} s warm-up)`);
  console.log(
    `  ${'connections'.padStart(11)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'max ms'.padStart(7)} ` +
      `${`>${SLOW_MS} ms`.padStart(7)} ${'loop stalls'.padStart(11)} ${'worst stall'.padStart(11)} ${'worst GC'.padStart(8)} ${'peak RSS MB'.padStart(11)} ${'db conns'.padStart(8)}`,
  );
  for (const { connections, report, loop, peakRssMb, dbConnections } of results) {
    const l = report.latenciesMs;
    const firstSlow = l.findIndex((ms) => ms > SLOW_MS);
    const slow = firstSlow < 0 ? 0 : l.length - firstSlow;
    console.log(
      `  ${String(connections).padStart(11)} ${Math.round(report.completed / report.seconds).toLocaleString('en-US').padStart(7)} ` +
        `${percentile(l, 50).toFixed(1).padStart(7)} ${percentile(l, 99).toFixed(1).padStart(7)} ${l[l.length - 1]!.toFixed(1).padStart(7)} ` +
        `${String(slow).padStart(7)} ${String(loop.stalls).padStart(11)} ${loop.worstMs.toFixed(1).padStart(11)} ${loop.worstGcMs.toFixed(1).padStart(8)} ` +
        `${peakRssMb.toFixed(1).padStart(11)} ${(dbConnections === undefined ? '-' : String(dbConnections)).padStart(8)}`,
    );
  }
  if (!peakReset) console.log('  (peak RSS: the highest of samples every 50 ms; the kernel refused to reset VmHWM)');
}

const TITLES: Readonly<Record<string, string>> = { sqlite: 'SQLite', postgres: 'PostgreSQL', floor: 'Floor (bench/support/floor-server.ts)' };
/** Sends per second by database, then by connections. */
const throughput = new Map<string, Map<number, number>>();
for (const name of DATABASES) {
  let database: TestDatabase | undefined;
  if (name === 'sqlite' || name === 'floor') {
    // The file goes into the server's data folder.
  } else if (name === 'postgres') {
    const why = await postgresUnavailable();
    if (why !== undefined) {
      console.log(`\npostgres: skipped (${why})`);
      continue;
    }
    database = await createPostgresDatabase();
  } else {
    throw new Error(`BENCH_DATABASES: unknown database ${name} (sqlite, postgres, floor)`);
  }
  try {
    const { how, results, peakReset } = await runDatabase(name, database?.connectionString);
    printTable(TITLES[name]!, how, results, peakReset);
    throughput.set(name, new Map(results.map((r) => [r.connections, r.report.completed / r.report.seconds])));
  } finally {
    await database?.drop();
  }
}
const [sqlite, postgres] = [throughput.get('sqlite')?.get(10), throughput.get('postgres')?.get(10)];
if (sqlite !== undefined && postgres !== undefined) {
  console.log(`\nPostgreSQL at 10 connections: ${Math.round((postgres / sqlite) * 100)}% of SQLite's throughput`);
}
const floor = throughput.get('floor');
if (floor !== undefined) {
  for (const [name, byConnections] of throughput) {
    if (name === 'floor') continue;
    const shares = [...byConnections].filter(([c]) => floor.has(c)).map(([c, rps]) => `${Math.round((rps / floor.get(c)!) * 100)}% at ${c}`);
    if (shares.length > 0) console.log(`${TITLES[name]} over the floor: ${shares.join(', ')}`);
  }
}
