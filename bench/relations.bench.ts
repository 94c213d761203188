// Relations at scale through HTTP, on SQLite: one message with 10,000 reactions (100 users × 100
// keys, sent over the client API as clients send them) and a thread of 1,000 replies, then timed:
// GET /relations/{id}/m.annotation?limit=10000 (every reaction in one request, to its last byte),
// the event with its
// bundled aggregations (the thread's newest reply, its count), and one more reaction (the duplicate
// check reads the reactions' index), once the server is idle again after the sends. Prints a table
// and never asserts: `npm run bench:relations`.
//
//   npm run bench:relations [-- <users> <keys> <replies> <requests>]   (default 100 100 1000 20)
//
// The server is a child process started as `npm start` starts it (bench/support/server-child.ts);
// BENCH_CPU_PROF_DIR=<folder> writes its CPU profile there, BENCH_ENTRY=<file> runs another build,
// BENCH_NODE_FLAGS adds node options after the start script's (e.g. "--max-semi-space-size=16").

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { ok, register, type Sender } from './support/accounts.js';
import { rawClient, type Call } from './support/http-clients.js';
import { launchServer, percentile, stopServer, waitForIdle, writeBenchConfig } from './support/server-child.js';

const USERS = Number(process.argv[2] ?? 100);
const KEYS = Number(process.argv[3] ?? 100);
const REPLIES = Number(process.argv[4] ?? 1_000);
const REQUESTS = Number(process.argv[5] ?? 20);
const CONCURRENCY = 16;
const WARM_UP = 3;

const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const row = (what: string, value: string) => console.log(`  ${what.padEnd(56)}  ${value}`);
const enc = encodeURIComponent;

/** Runs `jobs` with at most CONCURRENCY in flight. */
async function pool(jobs: (() => Promise<unknown>)[]): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < jobs.length) await jobs[next++]!();
  }));
}

async function timed(times: number, run: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    await run();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-relations-'));
  const profile = process.env['BENCH_CPU_PROF_DIR'];
  const entry = process.env['BENCH_ENTRY'];
  const server = await launchServer({
    configPath: writeBenchConfig(dataDir, `file:${join(dataDir, 'hearth.db')}`),
    ...(profile !== undefined ? { cpuProfDir: profile } : {}),
    ...(entry !== undefined ? { entry: resolve(entry) } : {}),
    nodeFlags: (process.env['BENCH_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== ''),
  });
  try {
    const call: Call = rawClient(server.baseUrl);
    const owner = await register(call, 'owner');
    const roomId = (await ok(call('POST', '/_matrix/client/v3/createRoom', owner.token, { preset: 'public_chat' }), 'createRoom'))['room_id'] as string;
    const users: Sender[] = [];
    for (let i = 0; i < USERS; i++) users.push(await register(call, `reactor${i}`));
    await pool(users.map((u) => () => ok(call('POST', `/_matrix/client/v3/join/${enc(roomId)}`, u.token, {}), 'join')));
    const send = (u: Sender, type: string, content: object, txn: string) =>
      ok(call('PUT', `/_matrix/client/v3/rooms/${enc(roomId)}/send/${enc(type)}/${txn}`, u.token, content), 'send');
    const root = (await send(owner, 'm.room.message', { msgtype: 'm.text', body: 'react to me' }, 'root'))['event_id'] as string;

    let t = performance.now();
    const reactions = users.flatMap((u, i) => Array.from({ length: KEYS }, (_, k) => () => send(u, 'm.reaction', { 'm.relates_to': { rel_type: 'm.annotation', event_id: root, key: `k${k}` } }, `r${i}-${k}`)));
    await pool(reactions);
    const reactSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    await pool(Array.from({ length: REPLIES }, (_, i) => () => send(users[i % USERS]!, 'm.room.message', { msgtype: 'm.text', body: `reply ${i}`, 'm.relates_to': { rel_type: 'm.thread', event_id: root } }, `t${i}`)));
    const replySeconds = (performance.now() - t) / 1000;
    // What the sends left for later (each reaction through every member's push rules, the search
    // index) is done before anything is timed, so the reads are timed alone.
    const settleSeconds = (await waitForIdle(server.child.pid!)) / 1000;

    // Timed to the response's last byte (the client's own JSON parse is not the server's time),
    // read with undici's request: fetch's web streams alone take some 10 ms to take in 3.4 MB on
    // loopback. Checked once, parsed; then WARM_UP requests untimed, as the first few run code the
    // JIT has not optimized yet (they take about twice as long).
    const relationsUrl = `${server.baseUrl}/_matrix/client/v1/rooms/${enc(roomId)}/relations/${enc(root)}/m.annotation?limit=${USERS * KEYS}`;
    const headers = { authorization: `Bearer ${owner.token}` };
    const served = (await (await fetch(relationsUrl, { headers })).json()) as { chunk: unknown[] };
    if (served.chunk.length !== USERS * KEYS) throw new Error(`${served.chunk.length} reactions served, ${USERS * KEYS} sent`);
    let bytes = 0;
    for (let i = 0; i < WARM_UP; i++) await (await request(relationsUrl, { headers })).body.arrayBuffer();
    const all = await timed(REQUESTS, async () => {
      const r = await request(relationsUrl, { headers });
      bytes = (await r.body.arrayBuffer()).byteLength;
      if (r.statusCode !== 200) throw new Error(`relations: HTTP ${r.statusCode}`);
    });
    const event = await timed(REQUESTS, async () => {
      const r = await ok(call('GET', `/_matrix/client/v3/rooms/${enc(roomId)}/event/${enc(root)}`, owner.token), 'event');
      const thread = ((r['unsigned'] as Record<string, Record<string, Record<string, unknown>>>)['m.relations']!['m.thread'])!;
      if (thread['count'] !== REPLIES) throw new Error(`thread count ${String(thread['count'])}, ${REPLIES} sent`);
    });
    const one = await timed(REQUESTS, async () => {
      await send(owner, 'm.reaction', { 'm.relates_to': { rel_type: 'm.annotation', event_id: root, key: `owner-${Math.random()}` } }, `o${Math.random()}`);
    });

    console.log(`\nRelations on SQLite (${server.how}; ${REQUESTS} requests each, after ${WARM_UP} untimed for GET /relations)`);
    row(`${fmt(USERS * KEYS, 0)} reactions sent (${CONCURRENCY} at a time)`, `${fmt((USERS * KEYS) / reactSeconds, 0)} /s`);
    row(`${fmt(REPLIES, 0)} thread replies sent`, `${fmt(REPLIES / replySeconds, 0)} /s`);
    row('background work after the sends (push rules, search index)', `${fmt(settleSeconds)} s`);
    row(`GET /relations m.annotation, all ${fmt(USERS * KEYS, 0)} in one request`, `p50 ${fmt(percentile(all, 50))} ms  p99 ${fmt(percentile(all, 99))} ms  (${fmt(bytes / 1e6)} MB)`);
    row('GET /event with bundled aggregations (thread, count)', `p50 ${fmt(percentile(event, 50))} ms  p99 ${fmt(percentile(event, 99))} ms`);
    row('one more reaction (duplicate check included)', `p50 ${fmt(percentile(one, 50))} ms  p99 ${fmt(percentile(one, 99))} ms`);
  } finally {
    await stopServer(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
