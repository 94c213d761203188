// Joining a big room held by another server: two real Hearth servers (SQLite) on loopback, finding
// each other through the test DNS and speaking TLS with the test CA's certificates, as the
// federation tests run them. On hs1 a public room of N members (the owner registered, the others
// joined through hs1's room service: real member events, no accounts); then, through the client
// API on hs2: bob's join (make_join, send_join and the whole state taken from the answer), the
// state and members hs2 then holds, bob's first read of the room's messages (it backfills from
// hs1), a message of hs1's owner reaching hs2 (polled with GET /messages every 20 ms), and carol's
// join on hs2 (a local join: hs2 is in the room by then). Both servers run in this process: the
// join's time includes hs1 building its send_join answer, and the memory figures are the process's
// (both servers'). Prints figures; asserts only that hs2 ends up with the room's members.
//
//   npm run bench:federation-join -- [members]
//
// HEARTH_BENCH_TRACE=1 prints hs1's transactions to hs2 as they go; HEARTH_BENCH_PROFILE=<dir>
// writes a CPU profile of each step there.

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join as joinPath } from 'node:path';
import { enc, request } from '../test/e2e/support/client.js';
import { startFederatedServer, startFederationNet } from '../test/support/federation-net.js';
import type { TestServer, TestUser } from '../test/support/server.js';

const MEMBERS = Number(process.argv[2] ?? 10_000);
/** Concurrent joins while building the room (hs1's writer batches what arrives together). */
const LANES = 10;
const POLL_MS = 20;
/** How long the message from hs1 is waited for on hs2. */
const ARRIVAL_LIMIT_MS = 60_000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => `${bytes >= 0 ? '+' : ''}${fmt(bytes / 2 ** 20, 1)} MiB`;
const seconds = (ms: number) => `${fmt(ms / 1000, 2)} s`;
/** One line of the table, printed as soon as it is measured (a later step may fail). */
const row = (what: string, value: string) => console.log(`  ${what.padEnd(50)}  ${value}`);

async function call(hs: TestServer, user: TestUser, method: string, path: string, body?: unknown) {
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

/** With HEARTH_BENCH_PROFILE=<dir>: a CPU profile of each step, written there as <step>.cpuprofile. */
const profileDir = process.env['HEARTH_BENCH_PROFILE'];
const session = profileDir === undefined ? undefined : new Session();
if (session !== undefined) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
}
async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (session === undefined) return fn();
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(joinPath(profileDir!, `${name}.cpuprofile`), JSON.stringify(profile));
  }
}

const net = await startFederationNet();
const hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend: 'sqlite' });
const hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend: 'sqlite' });
try {
  const alice = await hs1.registerUser('alice', 'alice-password');
  const bob = await hs2.registerUser('bob', 'bob-password');
  const carol = await hs2.registerUser('carol', 'carol-password');
  console.log(`federated join of a ${fmt(MEMBERS)}-member room, SQLite, TLS on loopback; both servers in this process (memory is both's)`);

  // 1. The room on hs1: alice's, public, and N - 1 more members joined through the room service.
  const rooms1 = hs1.server.services.rooms;
  const setup = await timed(() => step('setup', async () => {
    const { roomId } = await rooms1.createRoom({ userId: alice.userId, deviceId: alice.deviceId }, { preset: 'public_chat', name: 'big' });
    let next = 1;
    await Promise.all(
      Array.from({ length: LANES }, async () => {
        while (next < MEMBERS) {
          const n = next++;
          await rooms1.join({ userId: `@user${n}:hs1.test`, deviceId: 'BENCH' }, roomId);
        }
      }),
    );
    return roomId;
  }));
  const roomId = setup.result;
  const onHs1 = Object.keys((await call(hs1, alice, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  if (onHs1 !== MEMBERS) throw new Error(`hs1's room has ${onHs1} members, not ${MEMBERS}`);
  row(`room setup on hs1 (${fmt(MEMBERS)} members, service level)`, `${seconds(setup.wallMs)} (${fmt(MEMBERS / (setup.wallMs / 1000))} joins/s)`);

  // hs1's share of the join (its room service, in this process), timed around its two calls.
  const hs1Ms = { make: 0, send: 0 };
  const timing = <F extends (...args: never[]) => Promise<unknown>>(fn: F, what: keyof typeof hs1Ms): F =>
    (async (...args: Parameters<F>) => {
      const t = performance.now();
      try {
        return await fn(...args);
      } finally {
        hs1Ms[what] += performance.now() - t;
      }
    }) as F;
  rooms1.makeMembershipForServer = timing(rooms1.makeMembershipForServer.bind(rooms1), 'make');
  rooms1.sendMembershipForServer = timing(rooms1.sendMembershipForServer.bind(rooms1), 'send');

  // History hs2 backfills from hs1 (its first read of the room's messages starts at the join).
  const backfilled = { calls: 0, pdus: 0 };
  const backfill = rooms1.backfillForServer.bind(rooms1);
  rooms1.backfillForServer = async (...args) => {
    const answer = await backfill(...args);
    backfilled.calls++;
    backfilled.pdus += answer.pdus.length;
    return answer;
  };

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

  // hs1's transactions to hs2 (its federation sender's PUT /send), from bob's join on.
  const client1 = hs1.server.services.federation;
  if (client1 === undefined) throw new Error('hs1 has no federation client');
  const txns: { at: number; pdus: number; ms: number; outcome: string }[] = [];
  const request1 = client1.request.bind(client1);
  client1.request = async (req) => {
    if (!(req.method === 'PUT' && req.path.startsWith('/federation/v1/send/'))) return request1(req);
    const t = performance.now();
    const pdus = ((req.body as { pdus?: unknown[] } | undefined)?.pdus ?? []).length;
    const done = (outcome: string) => {
      txns.push({ at: t, pdus, ms: performance.now() - t, outcome });
      if (process.env['HEARTH_BENCH_TRACE'] !== undefined) console.log(`    [trace] hs1 → ${req.destination} ${req.path}: ${pdus} PDUs, ${outcome} in ${fmt(performance.now() - t)} ms`);
    };
    try {
      const res = await request1(req);
      done(String(res.status) + (res.status === 200 ? '' : ` ${JSON.stringify(res.body).slice(0, 200)}`));
      return res;
    } catch (err) {
      done(`failed: ${String(err).slice(0, 200)}`);
      throw err;
    }
  };

  // 2. bob's join through hs1, with the process's memory around it.
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const memBefore = process.memoryUsage();
  let peakRss = memBefore.rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
  const join = await timed(() => step('join', () => call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {})));
  clearInterval(sampler);
  const memAfter = process.memoryUsage();
  if (join.result['room_id'] !== roomId) throw new Error(`the join answered ${JSON.stringify(join.result)}`);
  row('bob joins through hs1 (POST /join, wall)', `${seconds(join.wallMs)} (process CPU ${seconds(join.cpuMs)})`);
  row('  of which hs1 make_join / send_join', `${fmt(hs1Ms.make)} ms / ${seconds(hs1Ms.send)}`);
  row(
    'process RSS: before → after join (peak)',
    `${fmt(memBefore.rss / 2 ** 20)} → ${fmt(memAfter.rss / 2 ** 20)} MiB (${fmt(peakRss / 2 ** 20)}), ${mib(memAfter.rss - memBefore.rss)}`,
  );
  row('process heap used: before → after join', `${fmt(memBefore.heapUsed / 2 ** 20)} → ${fmt(memAfter.heapUsed / 2 ** 20)} MiB, ${mib(memAfter.heapUsed - memBefore.heapUsed)}`);
  if (gc !== undefined) {
    gc();
    const settled = process.memoryUsage().heapUsed;
    row('  heap kept after a gc', `${fmt(settled / 2 ** 20)} MiB, ${mib(settled - memBefore.heapUsed)}`);
  }

  // 3. What hs2 holds of the room.
  const members2 = Object.keys((await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  const state2 = (await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state`)) as unknown as unknown[];
  row('hs2 then holds: joined members / state events', `${fmt(members2)} / ${fmt(state2.length)}`);
  if (members2 !== MEMBERS + 1) throw new Error(`hs2 holds ${members2} joined members of the room, not ${MEMBERS + 1}`);

  // 4. bob's first read of the room's messages on hs2 (the first one costs more than later ones),
  // then a message of alice's on hs1, until bob reads it on hs2.
  const firstRead = await timed(() => step('first-messages', () => call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`)));
  row("bob's first GET /messages on hs2", `${fmt(firstRead.wallMs)} ms (process CPU ${fmt(firstRead.cpuMs)} ms)`);
  row('  of which backfilled from hs1 (requests / events)', `${fmt(backfilled.calls)} / ${fmt(backfilled.pdus)}`);
  const body = `hello from hs1 ${Date.now()}`;
  const polls: number[] = [];
  let sentMs = 0;
  const arrival = await timed(() => step('arrival', async () => {
    const t0 = performance.now();
    await call(hs1, alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/bench-${Date.now()}`, { msgtype: 'm.text', body });
    sentMs = performance.now() - t0;
    const deadline = performance.now() + ARRIVAL_LIMIT_MS;
    for (;;) {
      const t = performance.now();
      const res = await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`);
      polls.push(performance.now() - t);
      if ((res['chunk'] as { content?: { body?: unknown } }[]).some((e) => e.content?.body === body)) return true;
      if (performance.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }));
  row("alice's message on hs1 → read on hs2", arrival.result ? `${fmt(arrival.wallMs)} ms (process CPU ${fmt(arrival.cpuMs)} ms; polled every ${POLL_MS} ms)` : `NOT ARRIVED within ${seconds(ARRIVAL_LIMIT_MS)}`);
  row('  of which: PUT /send on hs1; GET /messages on hs2', `${fmt(sentMs)} ms; ${fmt(polls.length)} polls, first ${fmt(polls[0] ?? 0)} ms, slowest ${fmt(Math.max(...polls))} ms`);
  const failed = txns.filter((t) => !t.outcome.startsWith('200'));
  row('  hs1 → hs2 transactions (sent / PDUs / not 200)', `${fmt(txns.length)} / ${fmt(txns.reduce((n, t) => n + t.pdus, 0))} / ${fmt(failed.length)}${failed.length > 0 ? ` (first: ${failed[0]!.outcome})` : ''}`);
  row('  hs2 room service received (calls / PDUs / time)', `${fmt(pushed.calls)} / ${fmt(pushed.pdus)} / ${seconds(pushed.ms)}`);

  // 5. carol's join on hs2: a local join, hs2 being in the room.
  const second = await timed(() => step('second-join', () => call(hs2, carol, 'POST', `/join/${enc(roomId)}`, {})));
  const members2After = Object.keys((await call(hs2, carol, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  row("carol's join on hs2 (local)", `${fmt(second.wallMs)} ms`);
  if (members2After !== MEMBERS + 2) throw new Error(`after carol's join hs2 holds ${members2After} members, not ${MEMBERS + 2}`);
  if (!arrival.result) process.exitCode = 1;
} finally {
  await hs1.close();
  await hs2.close();
  await net.close();
}
