// Sync figures against a real server in a child process (`hearth serve` on 127.0.0.1, a fresh
// SQLite data folder, or a fresh PostgreSQL database made through --postgres ADMIN-URL; rate
// limiting off):
//   1. send-to-sync delivery latency, p50 and p99, with 100 users long-polling in one room while
//      one user sends (each message is sent once all 100 have the previous one, 20 ms later);
//   2. initial and incremental sync time of a user in 500 rooms (incremental: one new message in
//      one room, and nothing new at all);
// then the server's peak RSS. Prints figures and never asserts.
//
// The server runs as `npm start` runs it: dist/cli.js (built first when older than the sources) with
// the start script's node options. `--entry FILE` runs another build; `--node-flags` adds options.
//
//   node --import tsx bench/sync.bench.ts [--messages N] [--rooms N] [--users N] [--postgres ADMIN-URL]
//     [--set-presence online|offline|unavailable] [--cpu-prof DIR] [--entry FILE] [--node-flags="..."]
//     [--server-log FILE]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type Call, httpClient, type Reply } from './support/http-clients.js';
import { launchServer, percentile, procStatusKb, stopServer, writeBenchConfig, type LaunchedServer } from './support/server-child.js';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '100' },
    rooms: { type: 'string', default: '500' },
    users: { type: 'string', default: '100' },
    postgres: { type: 'string' },
    'set-presence': { type: 'string', default: 'online' },
    'cpu-prof': { type: 'string' },
    entry: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    'server-log': { type: 'string' },
  },
});
const MESSAGES = Number(values.messages);
const ROOMS = Number(values.rooms);
const USERS = Number(values.users);
/** Between one message reaching every poller and the next send. */
const PAUSE_MS = 20;

// ---- the server child ----

/** With --postgres (an admin URL): a fresh database for the run, dropped afterwards. */
async function postgresDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `hearth_sync_bench_${process.pid}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function startServer(dataDir: string, connection: string): Promise<LaunchedServer> {
  const configPath = writeBenchConfig(dataDir, connection);
  return launchServer({
    configPath,
    ...(values.entry !== undefined ? { entry: resolve(values.entry) } : {}),
    nodeFlags: values['node-flags'].split(' ').filter((f) => f !== ''),
    ...(values['cpu-prof'] !== undefined ? { cpuProfDir: resolve(values['cpu-prof']) } : {}),
    ...(values['server-log'] !== undefined ? { serverLog: resolve(values['server-log']) } : {}),
  });
}

function peakRssMb(pid: number): number {
  return procStatusKb(pid, 'VmHWM') / 1024;
}

// ---- the client ----

type Body = Record<string, any>;
let client: Call;

/** A client-API call (`path` after /_matrix/client/v3). */
const call = (method: string, path: string, token: string | undefined, body?: unknown): Promise<Reply> =>
  client(method, `/_matrix/client/v3${path}`, token, body);

async function ok(method: string, path: string, token: string | undefined, body?: unknown): Promise<Body> {
  const r = await call(method, path, token, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

interface User {
  readonly userId: string;
  readonly token: string;
}

async function register(username: string): Promise<User> {
  const body = { username, password: 'bench-password', auth: { type: 'm.login.dummy' } };
  let r = await call('POST', '/register', undefined, body);
  if (r.status === 401 && typeof r.body['session'] === 'string') {
    r = await call('POST', '/register', undefined, { ...body, auth: { type: 'm.login.dummy', session: r.body['session'] } });
  }
  if (r.status !== 200) throw new Error(`register ${username}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return { userId: r.body['user_id'] as string, token: r.body['access_token'] as string };
}

const sync = (u: User, query: string) => ok('GET', `/sync?${query}`, u.token);
const enc = encodeURIComponent;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now();
  const out = await fn();
  return [performance.now() - start, out];
}

// ---- 1. delivery latency ----

async function deliveryLatency(): Promise<void> {
  const sender = await register('sender');
  const room = (await ok('POST', '/createRoom', sender.token, { preset: 'public_chat', name: 'latency' }))['room_id'] as string;
  const users: User[] = [];
  for (let i = 0; i < USERS; i++) {
    const u = await register(`poller${i}`);
    await ok('POST', `/join/${enc(room)}`, u.token, {});
    users.push(u);
  }
  const sentAt = new Map<string, number>();
  const received = new Map<string, number>();
  const delays: number[] = [];
  let waiter: (() => void) | undefined;
  let stop = false;
  const params = `filter=${enc(JSON.stringify({ room: { timeline: { limit: 50 } } }))}&set_presence=${enc(values['set-presence'])}`;

  const poll = async (u: User) => {
    let token = (await sync(u, params))['next_batch'] as string;
    while (!stop) {
      const s = await sync(u, `${params}&timeout=30000&since=${enc(token)}`);
      const now = performance.now();
      lastReply = now;
      token = s['next_batch'] as string;
      for (const e of s['rooms']?.['join']?.[room]?.['timeline']?.['events'] ?? []) {
        const body = e['content']?.['body'];
        const t = typeof body === 'string' ? sentAt.get(body) : undefined;
        if (t === undefined) continue;
        delays.push(now - t);
        const n = (received.get(body) ?? 0) + 1;
        received.set(body, n);
        if (n === USERS) waiter?.();
      }
    }
  };
  let lastReply = performance.now();
  const loops = users.map((u) => poll(u));
  // Let every poller reach its long-poll and the burst of their coming online settle: wait for
  // half a second without any sync answering.
  const settleBy = performance.now() + 60_000;
  while (performance.now() - lastReply < 500 && performance.now() < settleBy) await new Promise((r) => setTimeout(r, 50));
  const started = performance.now();
  for (let i = 0; i < MESSAGES; i++) {
    const body = `m${i}`;
    const all = new Promise<void>((done) => {
      waiter = done;
      setTimeout(done, 5000);
    });
    sentAt.set(body, performance.now());
    await ok('PUT', `/rooms/${enc(room)}/send/m.room.message/b${i}`, sender.token, { msgtype: 'm.text', body });
    await all;
    // Messages come apart, as people write them: the pollers are back waiting before the next.
    await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
  const elapsed = performance.now() - started;
  stop = true;
  // The pollers end with the next message.
  await ok('PUT', `/rooms/${enc(room)}/send/m.room.message/end`, sender.token, { msgtype: 'm.text', body: 'end' });
  await Promise.all(loops);
  const sorted = [...delays].sort((a, b) => a - b);
  const missing = MESSAGES * USERS - delays.length;
  console.log(`delivery, ${USERS} users long-polling one room, ${MESSAGES} messages (${sorted.length} deliveries${missing > 0 ? `, ${missing} missing` : ''}, ${(elapsed / 1000).toFixed(1)} s):`);
  console.log(`  send-to-sync latency p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`);
}

// ---- 2. a user in many rooms ----

async function manyRooms(): Promise<void> {
  const heavy = await register('heavy');
  const other = await register('other');
  const rooms: string[] = [];
  const created = performance.now();
  for (let i = 0; i < ROOMS; i++) {
    const roomId = (await ok('POST', '/createRoom', other.token, { preset: 'public_chat', name: `room ${i}` }))['room_id'] as string;
    await ok('POST', `/join/${enc(roomId)}`, heavy.token, {});
    await ok('PUT', `/rooms/${enc(roomId)}/send/m.room.message/x${i}`, other.token, { msgtype: 'm.text', body: `hello ${i}` });
    rooms.push(roomId);
  }
  console.log(`${ROOMS} rooms set up in ${((performance.now() - created) / 1000).toFixed(1)} s (server peak RSS so far ${peakRssMb(server.child.pid!).toFixed(0)} MB)`);
  const q = 'set_presence=offline';
  const initial: number[] = [];
  let initialBytes = 0;
  let token = '';
  for (let i = 0; i < 5; i++) {
    const [ms, s] = await timed(() => sync(heavy, q));
    if (Object.keys(s['rooms']['join']).length !== ROOMS) throw new Error('initial sync misses rooms');
    initial.push(ms);
    if (i === 0) initialBytes = Buffer.byteLength(JSON.stringify(s));
    token = s['next_batch'] as string;
  }
  const withMessage: number[] = [];
  const quiet: number[] = [];
  for (let i = 0; i < 50; i++) {
    const roomId = rooms[(i * 37) % rooms.length]!;
    await ok('PUT', `/rooms/${enc(roomId)}/send/m.room.message/y${i}`, other.token, { msgtype: 'm.text', body: `news ${i}` });
    const [ms, s] = await timed(() => sync(heavy, `${q}&since=${enc(token)}`));
    if (Object.keys(s['rooms']['join']).length !== 1) throw new Error(`incremental sync shows ${Object.keys(s['rooms']['join']).length} rooms`);
    withMessage.push(ms);
    token = s['next_batch'] as string;
    const [quietMs] = await timed(() => sync(heavy, `${q}&since=${enc(token)}`));
    quiet.push(quietMs);
  }
  const show = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `median ${percentile(s, 50).toFixed(1)} ms, p90 ${percentile(s, 90).toFixed(1)} ms`;
  };
  console.log(`a user in ${ROOMS} rooms:`);
  console.log(`  initial sync            ${show(initial)} (${initial.length} runs, ${(initialBytes / 1e6).toFixed(1)} MB of JSON)`);
  console.log(`  incremental, 1 message  ${show(withMessage)} (${withMessage.length} runs)`);
  console.log(`  incremental, no news    ${show(quiet)} (${quiet.length} runs)`);
}

// ---- the run ----

const dataDir = mkdtempSync(join(tmpdir(), 'hearth-sync-bench-'));
const database = values.postgres === undefined ? undefined : await postgresDatabase(values.postgres);
const server = await startServer(dataDir, database?.url ?? `file:${join(dataDir, 'hearth.db')}`);
client = httpClient(server.baseUrl, 1000);
try {
  console.log(`sync bench against ${server.baseUrl} (${server.how}, ${values.postgres === undefined ? 'SQLite' : 'PostgreSQL'})`);
  const peakAfterStart = peakRssMb(server.child.pid!);
  await deliveryLatency();
  const peakAfterDelivery = peakRssMb(server.child.pid!);
  await manyRooms();
  const peak = peakRssMb(server.child.pid!);
  console.log(
    `server peak RSS ${peak.toFixed(0)} MB (after start ${peakAfterStart.toFixed(0)}, after the delivery run ${peakAfterDelivery.toFixed(0)})`,
  );
} finally {
  await stopServer(server.child);
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
