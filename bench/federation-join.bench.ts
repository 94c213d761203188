// Joining a big room held by another server: two real Hearth servers (SQLite) on loopback, finding
// each other through the test DNS and speaking TLS with the test CA's certificates, as the
// federation tests run them. The target: a room of 10,000 members and 20,000 state events, joined
// from `/join` to the room in sync in < 10 s, the joining server's peak RSS < 300 MB.
//
// hs1, the resident, runs in a child process (bench/support/federation-join-resident.ts); this
// process holds the test DNS server and CA (it issues hs1's certificate and publishes hs1's records
// for it) and hs2, the joining server, so the memory figures of this process are hs2's (plus the
// DNS server's and tsx's). On hs1 a public room of N members (the owner registered, the others
// joined through hs1's room service: real member events, no accounts) and N more state events of
// distinct state keys, sent by the owner: some 2N state events. Then, through the client API on
// hs2: bob's join (make_join, send_join and the whole state taken from the answer) while bob's
// /sync waits for the room, the state and members hs2 then holds, bob's first read of the room's
// messages (it backfills from hs1), a message of hs1's owner reaching hs2 (polled with GET
// /messages every 20 ms), and carol's join on hs2 (a local join: hs2 is in the room by then).
// Prints figures; asserts only that hs2 ends up with the room's members.
//
//   npm run bench:federation-join -- [members]
//
// HEARTH_BENCH_TRACE=1 prints hs1's transactions to hs2 as they go; HEARTH_BENCH_PROFILE=<dir>
// writes a CPU profile of each step there, <step>.cpuprofile for hs2 and <step>.hs1.cpuprofile.

import { type ChildProcess, fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join as joinPath } from 'node:path';
import { enc, request } from '../test/e2e/support/client.js';
import { startFederatedServer, startFederationNet } from '../test/support/federation-net.js';
import type { TestServer, TestUser } from '../test/support/server.js';
import type { ResidentCommand, ResidentInit, ResidentMessage, ResidentReady, ResidentStats } from './support/federation-join-resident.js';
import { procStatusKb } from './support/server-child.js';

const MEMBERS = Number(process.argv[2] ?? 10_000);
/** Non-member state events on top of the members' (so some 2N state events in all). */
const EXTRA_STATE = MEMBERS;
/** Concurrent room-service calls while building the room (hs1's writer batches what arrives together). */
const LANES = 10;
const POLL_MS = 20;
const SAMPLE_MS = 50;
/** How long the message from hs1 is waited for on hs2. */
const ARRIVAL_LIMIT_MS = 60_000;
/** How long bob's /sync may take to show the room once the join has answered. */
const SYNC_LIMIT_MS = 120_000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => `${bytes >= 0 ? '+' : ''}${fmt(bytes / 2 ** 20, 1)} MiB`;
const mb = (bytes: number) => `${fmt(bytes / 2 ** 20)} MiB`;
const seconds = (ms: number) => `${fmt(ms / 1000, 2)} s`;
/** One line of the table, printed as soon as it is measured (a later step may fail). */
const row = (what: string, value: string) => console.log(`  ${what.padEnd(50)}  ${value}`);

async function call(hs: { baseUrl: string; serverName: string }, user: Pick<TestUser, 'accessToken'>, method: string, path: string, body?: unknown) {
  const res = await request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: user.accessToken });
  if (res.status !== 200) throw new Error(`${method} ${path} on ${hs.serverName} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}

/** Wall and CPU (this process's user + system) milliseconds of `fn`. */
async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; wallMs: number; cpuMs: number }> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(cpu);
  return { result, wallMs: performance.now() - wall, cpuMs: (used.user + used.system) / 1000 };
}

// --- hs1, the resident, in a child process ---------------------------------------------------

let resident: ChildProcess | undefined;
let nextId = 0;
const pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();

/** Asks the resident something and waits for its answer. */
function ask<T = undefined>(cmd: ResidentCommand['cmd'], extra: { name?: string } = {}): Promise<T> {
  const child = resident!;
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    child.send({ id, cmd, ...extra } as ResidentCommand);
  });
}

/** With HEARTH_BENCH_PROFILE=<dir>: a CPU profile of each step of both servers. */
const profileDir = process.env['HEARTH_BENCH_PROFILE'];
const session = profileDir === undefined ? undefined : new Session();
if (session !== undefined) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
}
async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (session === undefined) return fn();
  await ask('profile-start');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(joinPath(profileDir!, `${name}.cpuprofile`), JSON.stringify(profile));
    await ask('profile-stop', { name });
  }
}

const net = await startFederationNet();
let hs2: TestServer | undefined;
try {
  // 1. hs1 in its process, building the room.
  const init: ResidentInit = {
    name: 'hs1.test',
    address: '127.0.0.2',
    naming: 'chat',
    dnsAddress: net.dns.address,
    wellKnownPort: net.wellKnownPort,
    caCert: net.ca.cert,
    certificate: net.ca.issue(['hs1.test']),
    members: MEMBERS,
    extraState: EXTRA_STATE,
    lanes: LANES,
    trace: process.env['HEARTH_BENCH_TRACE'] !== undefined,
    ...(profileDir !== undefined ? { profileDir } : {}),
  };
  const child = fork(new URL('./support/federation-join-resident.ts', import.meta.url).pathname, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  resident = child;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<ResidentReady>((resolve, reject) => {
    child.on('message', (message: ResidentMessage) => {
      switch (message.type) {
        case 'dns':
          net.dns.set(message.name, message.records);
          break;
        case 'ready':
          resolve(message);
          break;
        case 'failed':
          reject(new Error(`hs1 failed: ${message.error}`));
          break;
        case 'reply': {
          const waiter = pending.get(message.id);
          pending.delete(message.id);
          if (message.error !== undefined) waiter?.reject(new Error(`hs1: ${message.error}`));
          else waiter?.resolve(message.value);
          break;
        }
      }
    });
    child.once('exit', (code, signal) => {
      const err = new Error(`hs1's process ended (${signal ?? code})`);
      reject(err);
      for (const waiter of pending.values()) waiter.reject(err);
      pending.clear();
    });
  });
  child.send(init);
  hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend: 'sqlite' });
  const bob = await hs2.registerUser('bob', 'bob-password');
  const carol = await hs2.registerUser('carol', 'carol-password');
  console.log(
    `federated join of a room of ${fmt(MEMBERS)} members and ${fmt(MEMBERS + EXTRA_STATE)}+ state events, SQLite, TLS on loopback; ` +
      `hs1 in a child process, hs2 (the joiner) in this one`,
  );
  const room = await ready;
  const { roomId } = room;
  const hs1 = { baseUrl: room.baseUrl, serverName: 'hs1.test' };
  const alice = { accessToken: room.ownerToken };
  if (room.members !== MEMBERS) throw new Error(`hs1's room has ${room.members} members, not ${MEMBERS}`);
  row(`room setup on hs1: ${fmt(MEMBERS)} members (service level)`, `${seconds(room.joinsMs)} (${fmt(MEMBERS / (room.joinsMs / 1000))} joins/s)`);
  row(`  then ${fmt(EXTRA_STATE)} more state events`, `${seconds(room.stateMs)} (${fmt(EXTRA_STATE / (room.stateMs / 1000))} events/s)`);

  // What hs2's room service is pushed by hs1 (transactions' PDUs), counted from bob's join on.
  const rooms2 = hs2.server.services.rooms;
  const pushed = { calls: 0, pdus: 0, ms: 0 };
  const receive = rooms2.receive.bind(rooms2);
  rooms2.receive = async (origin, pdus) => {
    const t = performance.now();
    try {
      return await receive(origin, pdus);
    } finally {
      pushed.calls++;
      pushed.pdus += pdus.length;
      pushed.ms += performance.now() - t;
    }
  };

  // 2. bob's join through hs1 (by the room's id, via hs1) while his /sync waits for the room; the
  // memory of both processes around it.
  let since = (await call(hs2, bob, 'GET', '/sync?timeout=0'))['next_batch'] as string;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await ask('mark');
  const memBefore = process.memoryUsage();
  let peakRss = memBefore.rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), SAMPLE_MS);
  sampler.unref();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let joinedMs = Infinity;
  const synced = (async () => {
    for (;;) {
      const res = await call(hs2, bob, 'GET', `/sync?since=${enc(since)}&timeout=30000`);
      const inRoom = (res['rooms'] as { join?: Record<string, { state?: { events?: unknown[] }; timeline?: { events?: unknown[] } }> } | undefined)?.join?.[roomId];
      if (inRoom !== undefined) return { ms: performance.now() - t0, state: inRoom.state?.events?.length ?? 0, timeline: inRoom.timeline?.events?.length ?? 0 };
      since = res['next_batch'] as string;
      if (performance.now() - t0 > joinedMs + SYNC_LIMIT_MS) throw new Error(`the room is not in bob's sync ${seconds(SYNC_LIMIT_MS)} after the join`);
    }
  })();
  // Awaited below; a failed join must not leave its rejection unhandled.
  synced.catch(() => {});
  const join = await timed(() =>
    step('join', async () => {
      const answer = await call(hs2!, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      joinedMs = performance.now() - t0;
      return answer;
    }),
  );
  const joinMemAfter = process.memoryUsage();
  const joinPeakRss = Math.max(peakRss, joinMemAfter.rss);
  const sync = await synced;
  const syncCpuMs = (() => {
    const used = process.cpuUsage(cpu0);
    return (used.user + used.system) / 1000;
  })();
  clearInterval(sampler);
  const memAfter = process.memoryUsage();
  peakRss = Math.max(peakRss, memAfter.rss);
  const hs1Stats = await ask<ResidentStats>('stats');
  if (join.result['room_id'] !== roomId) throw new Error(`the join answered ${JSON.stringify(join.result)}`);
  row('bob joins through hs1 (POST /join, wall)', `${seconds(join.wallMs)} (hs2's process CPU ${seconds(join.cpuMs)})`);
  row('  of which hs1 make_join / send_join', `${fmt(hs1Stats.makeJoinMs)} ms / ${seconds(hs1Stats.sendJoinMs)}`);
  row("the room in bob's /sync on hs2 (from /join on)", `${seconds(sync.ms)} (${fmt(sync.state)} state + ${fmt(sync.timeline)} timeline events; hs2's CPU ${seconds(syncCpuMs)})`);
  row(`hs2 RSS: before → after join (peak, ${SAMPLE_MS} ms samples)`, `${mb(memBefore.rss)} → ${mb(joinMemAfter.rss)} (${mb(joinPeakRss)}), ${mib(joinMemAfter.rss - memBefore.rss)}`);
  row('hs2 RSS: after sync (peak over join + sync)', `${mb(memAfter.rss)} (${mb(peakRss)}); VmHWM ${mb(procStatusKb(process.pid, 'VmHWM') * 1024)}`);
  row('hs2 heap used: before → after join → after sync', `${mb(memBefore.heapUsed)} → ${mb(joinMemAfter.heapUsed)} → ${mb(memAfter.heapUsed)}`);
  if (gc !== undefined) {
    gc();
    const settled = process.memoryUsage().heapUsed;
    row('  heap kept after a gc', `${mb(settled)}, ${mib(settled - memBefore.heapUsed)}`);
  }
  row('hs1 RSS: after (peak over join + sync; life VmHWM)', `${mb(hs1Stats.rss)} (${mb(hs1Stats.peakRss)}; ${mb(hs1Stats.hwm)}), heap ${mb(hs1Stats.heapUsed)}`);

  // 3. What hs2 holds of the room.
  const members2 = Object.keys((await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  const state2 = (await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state`)) as unknown as unknown[];
  row('hs2 then holds: joined members / state events', `${fmt(members2)} / ${fmt(state2.length)}`);
  if (members2 !== MEMBERS + 1) throw new Error(`hs2 holds ${members2} joined members of the room, not ${MEMBERS + 1}`);

  // 4. bob's first read of the room's messages on hs2 (the first one costs more than later ones),
  // then a message of alice's on hs1, until bob reads it on hs2.
  const firstRead = await timed(() => step('first-messages', () => call(hs2!, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`)));
  const afterRead = await ask<ResidentStats>('stats');
  row("bob's first GET /messages on hs2", `${fmt(firstRead.wallMs)} ms (hs2's process CPU ${fmt(firstRead.cpuMs)} ms)`);
  row('  of which backfilled from hs1 (requests / events)', `${fmt(afterRead.backfill.calls)} / ${fmt(afterRead.backfill.pdus)}`);
  const body = `hello from hs1 ${Date.now()}`;
  const polls: number[] = [];
  let sentMs = 0;
  const arrival = await timed(() =>
    step('arrival', async () => {
      const t = performance.now();
      await call(hs1, alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/bench-${Date.now()}`, { msgtype: 'm.text', body });
      sentMs = performance.now() - t;
      const deadline = performance.now() + ARRIVAL_LIMIT_MS;
      for (;;) {
        const tp = performance.now();
        const res = await call(hs2!, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`);
        polls.push(performance.now() - tp);
        if ((res['chunk'] as { content?: { body?: unknown } }[]).some((e) => e.content?.body === body)) return true;
        if (performance.now() > deadline) return false;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    }),
  );
  const { txns } = await ask<ResidentStats>('stats');
  row("alice's message on hs1 → read on hs2", arrival.result ? `${fmt(arrival.wallMs)} ms (hs2's process CPU ${fmt(arrival.cpuMs)} ms; polled every ${POLL_MS} ms)` : `NOT ARRIVED within ${seconds(ARRIVAL_LIMIT_MS)}`);
  row('  of which: PUT /send on hs1; GET /messages on hs2', `${fmt(sentMs)} ms; ${fmt(polls.length)} polls, first ${fmt(polls[0] ?? 0)} ms, slowest ${fmt(Math.max(...polls))} ms`);
  row('  hs1 → hs2 transactions (sent / PDUs / not 200)', `${fmt(txns.sent)} / ${fmt(txns.pdus)} / ${fmt(txns.failed)}${txns.firstFailure !== undefined ? ` (first: ${txns.firstFailure})` : ''}`);
  row('  hs2 room service received (calls / PDUs / time)', `${fmt(pushed.calls)} / ${fmt(pushed.pdus)} / ${seconds(pushed.ms)}`);

  // 5. carol's join on hs2: a local join, hs2 being in the room.
  const second = await timed(() => step('second-join', () => call(hs2!, carol, 'POST', `/join/${enc(roomId)}`, {})));
  const members2After = Object.keys((await call(hs2, carol, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  row("carol's join on hs2 (local)", `${fmt(second.wallMs)} ms`);
  if (members2After !== MEMBERS + 2) throw new Error(`after carol's join hs2 holds ${members2After} members, not ${MEMBERS + 2}`);
  if (!arrival.result) process.exitCode = 1;

  await ask('close');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
} finally {
  if (resident !== undefined && resident.exitCode === null && resident.signalCode === null) resident.kill();
  await hs2?.close();
  await net.close();
}
