// Sends per second through HTTP against a real server in a child process (`hearth serve` on
// 127.0.0.1, a fresh SQLite data folder, rate limiting off, logs at info, where requests are not
// logged): one sender and 10 concurrent senders, into one room and into 10 rooms; then the
// server's peak RSS (VmHWM). Prints a table and never asserts; `npm run bench` runs it.
//
//   node --import tsx bench/server.bench.ts [sends-per-case] [--client raw|http|fetch]
//     [--cpu-prof DIR] [--entry FILE] [--node-flags="--trace-gc ..."] [--server-log FILE]
//
// The server runs from dist/cli.js, as `npm start` runs it (with the node options of the start
// script): a dist/ older than the sources is built first (npm run build), and only if that fails
// does the server run from src/cli.ts through tsx, which holds some 50 MB more. `--entry FILE`
// runs another build. The header line says which ran.
//
// The client is this process, over keep-alive connections. By default a minimal HTTP/1.1 client
// on plain sockets: it costs about half the CPU per request of node:http with a keep-alive Agent
// (`--client http`), itself about a third of fetch (`--client fetch`), and a sequential sender
// waits for the client as much as for the server. Besides sends per second the table gives
// latency percentiles, CPU per send of the server and of the client, and the CPU that other
// processes took meanwhile (on a 2-core machine anything else running lowers the figures).
//
// `--cpu-prof DIR` writes the server's CPU profile into DIR; `--node-flags` adds node options for
// the server; `--server-log FILE` keeps its output.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { launchServer, percentile, procStatusKb, stopServer, writeBenchConfig, type LaunchedServer } from './support/server-child.js';
import { type Call, fetchClient, httpClient, rawClient } from './support/http-clients.js';
import { ok, register, type Sender } from './support/accounts.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    client: { type: 'string', default: 'raw' },
    'cpu-prof': { type: 'string' },
    entry: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    'server-log': { type: 'string' },
  },
});
const SENDS = Number(positionals[0] ?? 5000);
const CLIENTS = { http: 'node:http keep-alive', fetch: 'fetch', raw: 'raw HTTP/1.1 keep-alive' } as const;
type ClientName = keyof typeof CLIENTS;
if (!(values.client in CLIENTS)) throw new Error(`--client must be one of ${Object.keys(CLIENTS).join(', ')}`);
const CLIENT = values.client as ClientName;
const CPU_PROF = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);
const ENTRY = values.entry === undefined ? undefined : resolve(values.entry);
const NODE_FLAGS = values['node-flags'].split(' ').filter((f) => f !== '');
const SERVER_LOG = values['server-log'] === undefined ? undefined : resolve(values['server-log']);
const LANES = 10;


// ---- the server child ----

async function startServer(dataDir: string): Promise<LaunchedServer> {
  const configPath = writeBenchConfig(dataDir, `file:${join(dataDir, 'hearth.db')}`);
  return launchServer({
    configPath,
    ...(ENTRY !== undefined ? { entry: ENTRY } : {}),
    nodeFlags: NODE_FLAGS,
    ...(CPU_PROF !== undefined ? { cpuProfDir: CPU_PROF } : {}),
    ...(SERVER_LOG !== undefined ? { serverLog: SERVER_LOG } : {}),
  });
}

/** CPU time (user + system) the process has used, in microseconds. */
function procCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second).
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** CPU time (user + system, all CPUs) the machine has used, in microseconds. */
function machineCpuMicros(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + fields[7]!;
  return busy * 10_000;
}

// ---- the run ----

async function publicRoom(call: Call, senders: readonly Sender[]): Promise<string> {
  const [owner, ...others] = senders;
  const created = await ok(call('POST', '/_matrix/client/v3/createRoom', owner!.token, { preset: 'public_chat', name: 'bench' }), 'createRoom');
  const roomId = created['room_id'] as string;
  for (const s of others) await ok(call('POST', `/_matrix/client/v3/join/${encodeURIComponent(roomId)}`, s.token, {}), 'join');
  return roomId;
}

interface Result {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Server CPU (user + system) per send, in microseconds. */
  readonly serverCpuMicros: number;
  /** This process's CPU per send, in microseconds. */
  readonly clientCpuMicros: number;
  /** CPU used meanwhile by everything else on the machine, in CPUs (0.5: half of one). */
  readonly otherCpus: number;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-server-'));
  const server = await startServer(dataDir);
  const pid = server.child.pid!;
  try {
    const call = CLIENT === 'http' ? httpClient(server.baseUrl, LANES) : CLIENT === 'fetch' ? fetchClient(server.baseUrl) : rawClient(server.baseUrl);
    const senders: Sender[] = [];
    for (let i = 0; i < LANES; i++) senders.push(await register(call, `sender${i}`));
    const one = await publicRoom(call, senders);
    const ten: string[] = [];
    for (let i = 0; i < LANES; i++) ten.push(await publicRoom(call, senders));

    let txn = 0;
    const send = async (sender: Sender, roomId: string): Promise<void> => {
      txn++;
      const path = `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/t${txn}`;
      const r = await call('PUT', path, sender.token, { msgtype: 'm.text', body: `message ${txn} with a little text in it` });
      if (r.status !== 200 || typeof r.body['event_id'] !== 'string') throw new Error(`send: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    };

    /** `total` sends over `lanes` concurrent loops; lane i sends as senders[i] into `roomOf(i, n)`. */
    const run = async (lanes: number, total: number, roomOf: (lane: number, n: number) => string): Promise<Result> => {
      const perLane = Math.ceil(total / lanes);
      const latencies: number[] = [];
      const serverCpu = procCpuMicros(pid);
      const clientCpu = process.cpuUsage();
      const machineCpu = machineCpuMicros();
      const start = performance.now();
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          for (let n = 0; n < perLane; n++) {
            const t = performance.now();
            await send(senders[lane]!, roomOf(lane, n));
            latencies.push(performance.now() - t);
          }
        }),
      );
      const seconds = (performance.now() - start) / 1000;
      const sends = perLane * lanes;
      const client = process.cpuUsage(clientCpu);
      const server = procCpuMicros(pid) - serverCpu;
      const machine = machineCpuMicros() - machineCpu;
      latencies.sort((a, b) => a - b);
      return {
        perSecond: sends / seconds,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        serverCpuMicros: server / sends,
        clientCpuMicros: (client.user + client.system) / sends,
        otherCpus: Math.max(0, machine - server - client.user - client.system) / (seconds * 1e6),
      };
    };

    // Warm up: the rooms' heads, the token cache, and the JIT on both sides. A server that has
    // been up a while has its send path optimized; fewer than a few thousand sends of each kind
    // leave the first case measuring the compiler.
    await run(LANES, 3000, (l) => ten[l]!);
    await run(1, 3000, () => one);

    const cases: [string, () => Promise<Result>][] = [
      ['1 sender, 1 room', () => run(1, SENDS, () => one)],
      ['10 senders, 1 room', () => run(LANES, SENDS, () => one)],
      ['1 sender, 10 rooms', () => run(1, SENDS, (_, n) => ten[n % LANES]!)],
      ['10 senders, 10 rooms', () => run(LANES, SENDS, (l) => ten[l]!)],
    ];
    console.log(`HTTP room sends (SQLite, server: ${server.how}, client: ${CLIENTS[CLIENT]}, ${SENDS} sends per case)`);
    console.log(
      `  ${'case'.padEnd(22)} ${'sends/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'server CPU µs/send'.padStart(19)} ${'client CPU µs/send'.padStart(19)} ${'other CPU'.padStart(10)}`,
    );
    let busyElsewhere = false;
    for (const [name, fn] of cases) {
      const r = await fn();
      busyElsewhere ||= r.otherCpus > 0.1;
      console.log(
        `  ${name.padEnd(22)} ${Math.round(r.perSecond).toLocaleString('en-US').padStart(8)} ${r.p50Ms.toFixed(2).padStart(7)} ${r.p99Ms.toFixed(2).padStart(7)} ${Math.round(r.serverCpuMicros).toString().padStart(19)} ${Math.round(r.clientCpuMicros).toString().padStart(19)} ${`${Math.round(r.otherCpus * 100)}%`.padStart(10)}`,
      );
    }
    // On a machine this small, anything else running takes a core from the server or the client.
    if (busyElsewhere) console.log('  (other processes used the CPU during the run: the figures are low; run again on a quiet machine)');
    const peak = procStatusKb(pid, 'VmHWM');
    const now = procStatusKb(pid, 'VmRSS');
    console.log(`server RSS: peak ${(peak / 1024).toFixed(1)} MB, at the end ${(now / 1024).toFixed(1)} MB`);
  } finally {
    await stopServer(server.child);
    rmSync(dataDir, { recursive: true, force: true });
    if (CPU_PROF !== undefined) console.log(`server CPU profile written to ${CPU_PROF}`);
  }
}

await main();
