// Joining a big room held by another server: two real Hearth servers (SQLite) on loopback, finding
// each other through the test DNS and speaking TLS with the test CA's certificates, as the
// federation tests run them. The target: a room of 10,000 members and 20,000 state events, joined
// from `/join` to the room in sync in < 10 s, the joining server's peak RSS < 300 MB.
//
// Each server runs in a child process; this one holds the test DNS server and CA (it issues both
// servers' certificates and publishes their records) and the clients. hs1, the resident
// (bench/support/federation-join-resident.ts, under tsx), builds the room: a public room of N
// members (the owner registered, the others joined through hs1's room service: real member
// events, no accounts) and N more state events of distinct state keys, sent by the owner: some 2N
// state events. hs2, the joining server (bench/support/federation-join-joiner.mjs), runs built, as
// `npm start` runs it (dist/, built first when older than src/), so its memory figures are the
// server's own. Then, through the client API on hs2: bob's join (make_join, send_join and the
// whole state taken from the answer) while bob's /sync waits for the room, the state and members
// hs2 then holds, bob's first read of the room's messages (it backfills from hs1), a message of
// hs1's owner reaching hs2 (polled with GET /messages every 20 ms), and carol's join on hs2 (a
// local join: hs2 is in the room by then). Prints figures; asserts only that hs2 ends up with the
// room's members.
//
//   npm run bench:federation-join -- [members]
//
// HEARTH_BENCH_TRACE=1 prints hs1's transactions to hs2 as they go; HEARTH_BENCH_PROFILE=<dir>
// writes a CPU profile of each step there, <step>.cpuprofile for hs2 and <step>.hs1.cpuprofile.

import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { stringify } from 'yaml';
import { enc, request } from '../test/e2e/support/client.js';
import { startFederationNet } from '../test/support/federation-net.js';
import type { TestUser } from '../test/support/server.js';
import type { ResidentCommand, ResidentInit, ResidentMessage, ResidentReady, ResidentStats } from './support/federation-join-resident.js';
import { root, serverScript, startScriptEnv, startScriptNodeFlags } from './support/server-child.js';

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

// --- the servers, each in a child process ---------------------------------------------------

interface ChildReply {
  readonly type: 'reply';
  readonly id: number;
  readonly value?: unknown;
  readonly error?: string;
}

/** A forked server: commands out, replies back by id; its other messages to `onMessage`. */
class ServerChild {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    onMessage: (message: { type: string }) => void,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (message: { type: string }) => {
      if (message.type !== 'reply') return onMessage(message);
      const { id, error, value } = message as ChildReply;
      const waiter = this.pending.get(id);
      this.pending.delete(id);
      if (error !== undefined) waiter?.reject(new Error(`${name}: ${error}`));
      else waiter?.resolve(value);
    });
    child.once('exit', (code, signal) => {
      const err = new Error(`${name}'s process ended (${signal ?? code})`);
      for (const waiter of this.pending.values()) waiter.reject(err);
      this.pending.clear();
    });
  }

  /** Asks the server something and waits for its answer. */
  ask<T = undefined>(cmd: string, extra: { name?: string } = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ id, cmd, ...extra } as ResidentCommand);
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    await this.ask('close').catch(() => undefined);
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
  }
}

/** Resolves with the child's `ready` message; rejects on `failed` or exit. */
function readyOf<T>(child: ChildProcess, name: string): { ready: Promise<T>; onMessage: (message: { type: string; error?: string }) => boolean } {
  let settle: { resolve: (value: T) => void; reject: (err: Error) => void } | undefined;
  const ready = new Promise<T>((resolve, reject) => {
    settle = { resolve, reject };
    child.once('exit', (code, signal) => reject(new Error(`${name}'s process ended (${signal ?? code}) before it was ready`)));
  });
  const onMessage = (message: { type: string; error?: string }) => {
    if (message.type === 'ready') settle!.resolve(message as T);
    else if (message.type === 'failed') settle!.reject(new Error(`${name} failed: ${message.error}`));
    else return false;
    return true;
  };
  return { ready, onMessage };
}

interface JoinerReady {
  readonly baseUrl: string;
  readonly tlsPort: number;
  readonly users: Record<'bob' | 'carol', TestUser>;
  readonly gc: boolean;
}

interface JoinerStats {
  readonly rss: number;
  /** The largest RSS sampled (every 50 ms) since the last `mark`. */
  readonly peakRss: number;
  /** What the process held at that peak (external: Buffers and other memory V8 is told of). */
  readonly atPeak: { readonly heapTotal: number; readonly heapUsed: number; readonly external: number };
  /** VmHWM: the process's peak RSS over its life. */
  readonly hwm: number;
  readonly heapUsed: number;
  /** The process's CPU (user + system) since its start. */
  readonly cpuMs: number;
  /** What hs1 pushed to its room service since the last `mark`. */
  readonly pushed: { readonly calls: number; readonly pdus: number; readonly ms: number };
}

const profileDir = process.env['HEARTH_BENCH_PROFILE'];
const net = await startFederationNet();
const hs2Dir = mkdtempSync(joinPath(tmpdir(), 'hearth-federation-joiner-'));
const children: ServerChild[] = [];
try {
  // 1. hs1 in its process, building the room; hs2 in its own meanwhile.
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
  const residentProcess = fork(new URL('./support/federation-join-resident.ts', import.meta.url).pathname, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const residentReady = readyOf<ResidentReady>(residentProcess, 'hs1');
  const hs1Child = new ServerChild('hs1', residentProcess, (message) => {
    const m = message as ResidentMessage;
    if (m.type === 'dns') net.dns.set(m.name, m.records);
    else residentReady.onMessage(m);
  });
  children.push(hs1Child);
  residentProcess.send(init);

  const { script, how } = serverScript();
  if (!script.endsWith('dist/cli.js')) throw new Error(`hs2 runs built (dist/), which could not be made: ${how}`);
  const cert = net.ca.issue(['hs2.test']);
  writeFileSync(joinPath(hs2Dir, 'hs2.crt'), cert.cert);
  writeFileSync(joinPath(hs2Dir, 'hs2.key'), cert.key);
  const configPath = joinPath(hs2Dir, 'hearth.yaml');
  writeFileSync(
    configPath,
    stringify({
      version: 2,
      global: { server_name: 'hs2.test', data_dir: hs2Dir, protocol_name: 'matrix', database: { connection_string: `file:${joinPath(hs2Dir, 'hearth.db')}` } },
      listen: { http: '127.0.0.1:0', https: '127.0.0.3:0', tls_cert: joinPath(hs2Dir, 'hs2.crt'), tls_key: joinPath(hs2Dir, 'hs2.key') },
      client_api: { registration_disabled: false, rate_limiting: { enabled: false } },
      user_api: { bcrypt_cost: 4 },
    }),
  );
  const nodeFlags = [...startScriptNodeFlags(), '--expose-gc'];
  const joinerProcess = fork(joinPath(root, 'bench/support/federation-join-joiner.mjs'), [], { execArgv: nodeFlags, env: startScriptEnv(), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const joinerReady = readyOf<JoinerReady>(joinerProcess, 'hs2');
  const hs2Child = new ServerChild('hs2', joinerProcess, (message) => joinerReady.onMessage(message as { type: string }));
  children.push(hs2Child);
  joinerProcess.send({ configPath, dnsAddress: net.dns.address, caCert: net.ca.cert, wellKnownPort: net.wellKnownPort, users: ['bob', 'carol'], ...(profileDir !== undefined ? { profileDir } : {}) });
  const joiner = await joinerReady.ready;
  net.dns.set('hs2.test', { a: ['127.0.0.3'] });
  net.dns.set('_matrix-fed._tcp.hs2.test', { srv: [{ target: 'hs2.test', port: joiner.tlsPort }] });
  const hs2 = { baseUrl: joiner.baseUrl, serverName: 'hs2.test' };
  const { bob, carol } = joiner.users;
  console.log(
    `federated join of a room of ${fmt(MEMBERS)} members and ${fmt(MEMBERS + EXTRA_STATE)}+ state events, SQLite, TLS on loopback; ` +
      `each server in its own process, hs2 (the joiner) as \`npm start\` runs it: node ${nodeFlags.join(' ')} (dist/)`,
  );
  const room = await residentReady.ready;
  const { roomId } = room;
  const hs1 = { baseUrl: room.baseUrl, serverName: 'hs1.test' };
  const alice = { accessToken: room.ownerToken };
  if (room.members !== MEMBERS) throw new Error(`hs1's room has ${room.members} members, not ${MEMBERS}`);
  row(`room setup on hs1: ${fmt(MEMBERS)} members (service level)`, `${seconds(room.joinsMs)} (${fmt(MEMBERS / (room.joinsMs / 1000))} joins/s)`);
  row(`  then ${fmt(EXTRA_STATE)} more state events`, `${seconds(room.stateMs)} (${fmt(EXTRA_STATE / (room.stateMs / 1000))} events/s)`);

  /** With HEARTH_BENCH_PROFILE=<dir>: a CPU profile of each step of both servers. */
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    if (profileDir === undefined) return fn();
    await Promise.all([hs1Child.ask('profile-start'), hs2Child.ask('profile-start')]);
    try {
      return await fn();
    } finally {
      await Promise.all([hs1Child.ask('profile-stop', { name }), hs2Child.ask('profile-stop', { name })]);
    }
  };
  /** Wall milliseconds of `fn`, and hs2's CPU over them. */
  const timed = async <T>(fn: () => Promise<T>): Promise<{ result: T; wallMs: number; cpuMs: number }> => {
    const before = await hs2Child.ask<JoinerStats>('stats');
    const wall = performance.now();
    const result = await fn();
    const wallMs = performance.now() - wall;
    const after = await hs2Child.ask<JoinerStats>('stats');
    return { result, wallMs, cpuMs: after.cpuMs - before.cpuMs };
  };

  // 2. bob's join through hs1 (by the room's id, via hs1) while his /sync waits for the room; the
  // memory of both servers around it.
  let since = (await call(hs2, bob, 'GET', '/sync?timeout=0'))['next_batch'] as string;
  await hs1Child.ask('mark');
  const memBefore = await hs2Child.ask<{ rss: number; heapUsed: number }>('mark');
  const cpuBefore = (await hs2Child.ask<JoinerStats>('stats')).cpuMs;
  const t0 = performance.now();
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
      const answer = await call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      joinedMs = performance.now() - t0;
      return answer;
    }),
  );
  const afterJoin = await hs2Child.ask<JoinerStats>('stats');
  const sync = await synced;
  const afterSync = await hs2Child.ask<JoinerStats>('stats');
  const hs1Stats = await hs1Child.ask<ResidentStats>('stats');
  if (join.result['room_id'] !== roomId) throw new Error(`the join answered ${JSON.stringify(join.result)}`);
  row('bob joins through hs1 (POST /join, wall)', `${seconds(join.wallMs)} (hs2's CPU ${seconds(join.cpuMs)})`);
  row('  of which hs1 make_join / send_join', `${fmt(hs1Stats.makeJoinMs)} ms / ${seconds(hs1Stats.sendJoinMs)}`);
  row("the room in bob's /sync on hs2 (from /join on)", `${seconds(sync.ms)} (${fmt(sync.state)} state + ${fmt(sync.timeline)} timeline events; hs2's CPU ${seconds(afterSync.cpuMs - cpuBefore)})`);
  row(`hs2 RSS: before → after join (peak, ${SAMPLE_MS} ms samples)`, `${mb(memBefore.rss)} → ${mb(afterJoin.rss)} (${mb(afterJoin.peakRss)}), ${mib(afterJoin.rss - memBefore.rss)}`);
  row('hs2 RSS: after sync (peak over join + sync)', `${mb(afterSync.rss)} (${mb(afterSync.peakRss)}); VmHWM ${mb(afterSync.hwm)}`);
  row('  at the peak: heap total / heap used / external', `${mb(afterSync.atPeak.heapTotal)} / ${mb(afterSync.atPeak.heapUsed)} / ${mb(afterSync.atPeak.external)}`);
  row('hs2 heap used: before → after join → after sync', `${mb(memBefore.heapUsed)} → ${mb(afterJoin.heapUsed)} → ${mb(afterSync.heapUsed)}`);
  if (joiner.gc) {
    const settled = (await hs2Child.ask<{ heapUsed: number }>('gc')).heapUsed;
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
  const firstRead = await timed(() => step('first-messages', () => call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`)));
  const afterRead = await hs1Child.ask<ResidentStats>('stats');
  row("bob's first GET /messages on hs2", `${fmt(firstRead.wallMs)} ms (hs2's CPU ${fmt(firstRead.cpuMs)} ms)`);
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
        const res = await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=5`);
        polls.push(performance.now() - tp);
        if ((res['chunk'] as { content?: { body?: unknown } }[]).some((e) => e.content?.body === body)) return true;
        if (performance.now() > deadline) return false;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    }),
  );
  const { txns } = await hs1Child.ask<ResidentStats>('stats');
  const { pushed } = await hs2Child.ask<JoinerStats>('stats');
  row("alice's message on hs1 → read on hs2", arrival.result ? `${fmt(arrival.wallMs)} ms (hs2's CPU ${fmt(arrival.cpuMs)} ms; polled every ${POLL_MS} ms)` : `NOT ARRIVED within ${seconds(ARRIVAL_LIMIT_MS)}`);
  row('  of which: PUT /send on hs1; GET /messages on hs2', `${fmt(sentMs)} ms; ${fmt(polls.length)} polls, first ${fmt(polls[0] ?? 0)} ms, slowest ${fmt(Math.max(...polls))} ms`);
  row('  hs1 → hs2 transactions (sent / PDUs / not 200)', `${fmt(txns.sent)} / ${fmt(txns.pdus)} / ${fmt(txns.failed)}${txns.firstFailure !== undefined ? ` (first: ${txns.firstFailure})` : ''}`);
  row('  hs2 room service received (calls / PDUs / time)', `${fmt(pushed.calls)} / ${fmt(pushed.pdus)} / ${seconds(pushed.ms)}`);

  // 5. carol's join on hs2: a local join, hs2 being in the room.
  const second = await timed(() => step('second-join', () => call(hs2, carol, 'POST', `/join/${enc(roomId)}`, {})));
  const members2After = Object.keys((await call(hs2, carol, 'GET', `/rooms/${enc(roomId)}/joined_members`))['joined'] as object).length;
  row("carol's join on hs2 (local)", `${fmt(second.wallMs)} ms`);
  if (members2After !== MEMBERS + 2) throw new Error(`after carol's join hs2 holds ${members2After} members, not ${MEMBERS + 2}`);
  if (!arrival.result) process.exitCode = 1;
} finally {
  await Promise.all(children.map((c) => c.close()));
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill();
  await net.close();
  rmSync(hs2Dir, { recursive: true, force: true });
}
