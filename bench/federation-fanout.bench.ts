// Outbound federation fan-out: one room's messages sent by a hub server's user to 50 other servers.
// The hub is a real Hearth server (SQLite, TLS listener on 127.0.0.2, found through the test DNS);
// its federation sender keeps one durable queue per destination and sends each transactions of up
// to 50 PDUs (PUT /_chat/federation/v1/send/{txnId}). The destinations dest1.test … dest50.test
// are fakes, all served by one HTTPS server on 127.0.0.3 with one certificate naming them all (an
// A and a `_chat._tcp` SRV record each): a transaction is answered 200 at once (no signature
// checked) and its PDUs counted for the destination its Host header names. Each destination has a
// member in the room (make_join / send_join through the hub's room service, the join signed by the
// destination's key), so the hub's room_joined_servers lists all 50.
//
// Before the clock: the joins, the sender's queues, and one warm-up message delivered everywhere
// (the hub's first contact with each destination: well-known and SRV lookups, TLS connections).
// Measured: a hub user sends M messages through the client API (PUT /send on a few connections),
// until every destination has all M. The fake runs in the hub's process: memory and CPU figures
// include it. Prints figures; asserts only that every destination got every message.
//
//   npm run bench:federation-fanout -- [messages=1000] [destinations=50]
//
// HEARTH_BENCH_PROFILE=<file.cpuprofile> writes a CPU profile of the measured part.

import { writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Session } from 'node:inspector/promises';
import type { Pdu } from '../src/protocol/events.js';
import type { JsonObject } from '../src/protocol/json.js';
import { getRoomVersion } from '../src/protocol/room-versions.js';
import { enc, request } from '../test/e2e/support/client.js';
import { startFederatedServer, startFederationNet } from '../test/support/federation-net.js';
import { RemoteServer } from '../test/support/remote-server.js';
import { listenHttps } from '../test/support/test-ca.js';

const MESSAGES = Number(process.argv[2] ?? 1000);
const DESTINATIONS = Number(process.argv[3] ?? 50);
/** Concurrent client connections sending the messages. */
const LANES = 4;
const VERSION = getRoomVersion('10')!;
/** How long the destinations are waited for after the last message is sent. */
const DELIVERY_LIMIT_MS = 120_000;
const SETTLE_LIMIT_MS = 30_000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const seconds = (ms: number) => `${fmt(ms / 1000, 2)} s`;
const row = (what: string, value: string) => console.log(`  ${what.padEnd(52)}  ${value}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

// --- the fake destinations -------------------------------------------------------------------

interface Destination {
  readonly name: string;
  readonly remote: RemoteServer;
  /** Which of the measured messages arrived (by index), and how many distinct ones. */
  readonly seen: Uint8Array;
  distinct: number;
  /** Transactions with PDUs / with none (EDUs only); PDUs of any kind; measured messages seen again. */
  txns: number;
  eduTxns: number;
  pdus: number;
  duplicates: number;
  /** performance.now() when the warm-up message, and the last measured one, arrived. */
  warmAt: number | undefined;
  doneAt: number | undefined;
}

const names = Array.from({ length: DESTINATIONS }, (_, i) => `dest${i + 1}.test`);
const dests = new Map<string, Destination>(
  names.map((name) => [
    name,
    { name, remote: new RemoteServer({ serverName: name }), seen: new Uint8Array(MESSAGES), distinct: 0, txns: 0, eduTxns: 0, pdus: 0, duplicates: 0, warmAt: undefined, doneAt: undefined },
  ]),
);
const MARK = `fanout-${Date.now()}-`;
const WARM_UP = `${MARK}warm-up`;
let unrecognized = 0;
let tlsConnections = 0;

/** The destination a request is for: its Host header, else the authorization's `destination`. */
function destinationOf(req: IncomingMessage): Destination | undefined {
  const byHost = dests.get((req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase());
  if (byHost !== undefined) return byHost;
  const m = /destination="?([^",\s]+)"?/.exec(req.headers.authorization ?? '');
  return m === null ? undefined : dests.get(m[1]!.toLowerCase());
}

function handler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (d: Buffer) => chunks.push(d));
  req.on('end', () => {
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const dest = destinationOf(req);
    if (req.method !== 'PUT' || !/^\/_(chat|matrix)\/federation\/v1\/send\/[^/?]+/.test(req.url ?? '') || dest === undefined) {
      unrecognized++;
      return json(404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    }
    const pdus = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { pdus?: JsonObject[] }).pdus ?? [];
    if (pdus.length === 0) dest.eduTxns++;
    else dest.txns++;
    dest.pdus += pdus.length;
    for (const p of pdus) {
      const body = (p['content'] as JsonObject | undefined)?.['body'];
      if (typeof body !== 'string' || !body.startsWith(MARK)) continue;
      if (body === WARM_UP) {
        dest.warmAt ??= performance.now();
        continue;
      }
      const i = Number.parseInt(body.slice(MARK.length), 10);
      if (dest.seen[i] === 1) {
        dest.duplicates++;
        continue;
      }
      dest.seen[i] = 1;
      if (++dest.distinct === MESSAGES) dest.doneAt = performance.now();
    }
    json(200, { pdus: {} });
  });
}

/** Waits until `done` holds for every destination, or `limitMs` has passed; true if it held. */
async function everyDestination(done: (d: Destination) => boolean, limitMs: number): Promise<boolean> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    if ([...dests.values()].every(done)) return true;
    if (performance.now() > deadline) return false;
    await sleep(10);
  }
}

// --- setup -------------------------------------------------------------------------------------

const net = await startFederationNet();
const fake = await listenHttps('127.0.0.3', 0, net.ca.issue(names.length > 0 ? names : ['dest0.test']), handler);
fake.server.on('secureConnection', () => tlsConnections++);
for (const name of names) {
  net.dns.set(name, { a: ['127.0.0.3'] });
  net.dns.set(`_chat._tcp.${name}`, { srv: [{ target: name, port: fake.port }] });
}
const hs = await startFederatedServer(net, {
  name: 'hub.test',
  address: '127.0.0.2',
  backend: 'sqlite',
  federation: { senderRetry: { minMs: 100, maxMs: 1000 } },
});

try {
  console.log(`federation fan-out: ${fmt(MESSAGES)} messages of one room to ${DESTINATIONS} servers, SQLite, TLS on loopback; the fake destinations run in the hub's process`);
  const alice = await hs.registerUser('alice', 'alice-password');
  const send = async (txnId: string, body: string) => {
    const res = await request(hs.baseUrl, 'PUT', `/_chat/client/v3/rooms/${enc(roomId)}/send/m.room.message/${txnId}`, { msgtype: 'm.text', body }, { token: alice.accessToken });
    if (res.status !== 200) throw new Error(`PUT /send answered ${res.status}: ${res.text}`);
  };
  const created = await request(hs.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_version: '10' }, { token: alice.accessToken });
  if (created.status !== 200) throw new Error(`createRoom answered ${created.status}: ${created.text}`);
  const roomId = created.body.room_id as string;

  // One member of each destination, joined through the hub's room service.
  const rooms = hs.server.services.rooms;
  const setupStarted = performance.now();
  for (const dest of dests.values()) {
    const { remote } = dest;
    hs.server.services.keyRing.add(dest.name, remote.signingKey.keyId, { publicKey: remote.signingKey.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });
    const userId = `@member:${dest.name}`;
    const { event } = await rooms.makeMembershipForServer(dest.name, roomId, userId, 'join', ['10']);
    const filled = { ...event, content: { ...(event['content'] as JsonObject), displayname: `member of ${dest.name}` } };
    const signed = remote.forge(filled as unknown as Pdu, VERSION);
    await rooms.sendMembershipForServer(dest.name, roomId, signed.eventId, signed.pdu, 'join');
  }
  const joined = await hs.server.core.db
    .selectFrom('room_joined_servers as j')
    .innerJoin('rooms as r', 'r.room_nid', 'j.room_nid')
    .select('j.server_name')
    .where('r.room_id', '=', roomId)
    .execute();
  const joinedRemotes = joined.filter((j) => dests.has(j.server_name)).length;
  if (joinedRemotes !== DESTINATIONS) throw new Error(`room_joined_servers lists ${joinedRemotes} of the ${DESTINATIONS} destinations`);

  // The sender settles: a running queue for every destination.
  const sender = hs.server.services.federationSender;
  if (sender === undefined) throw new Error('the hub has no federation sender');
  const settleDeadline = performance.now() + SETTLE_LIMIT_MS;
  while (names.some((n) => sender.position(n) === undefined)) {
    if (performance.now() > settleDeadline) throw new Error(`the sender has queues for ${sender.destinations.length} destinations after ${seconds(SETTLE_LIMIT_MS)}`);
    await sleep(20);
  }
  row(`setup: ${DESTINATIONS} remote joins, a sender queue for each`, seconds(performance.now() - setupStarted));

  // First contact: one message to every destination (resolution, TLS connections).
  const warmCpu = process.cpuUsage();
  const warmStarted = performance.now();
  await send('warm-up', WARM_UP);
  if (!(await everyDestination((d) => d.warmAt !== undefined, SETTLE_LIMIT_MS))) throw new Error('the warm-up message did not reach every destination');
  const warmArrivals = [...dests.values()].map((d) => d.warmAt! - warmStarted).sort((a, b) => a - b);
  const warmUsed = process.cpuUsage(warmCpu);
  row('first message to every destination: last / median', `${seconds(quantile(warmArrivals, 1))} / ${seconds(quantile(warmArrivals, 0.5))} (process CPU ${seconds((warmUsed.user + warmUsed.system) / 1000)}; ${fmt(tlsConnections)} TLS connections)`);
  const before = new Map(names.map((n) => [n, { ...dests.get(n)! }]));

  // --- measured: M messages through the client API, until every destination has them all ------
  const profileFile = process.env['HEARTH_BENCH_PROFILE'];
  const session = profileFile === undefined ? undefined : new Session();
  if (session !== undefined) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
  }
  let peakRss = 0;
  let peakHeap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  };
  sample();
  const rssBefore = peakRss;
  const heapBefore = peakHeap;
  const sampler = setInterval(sample, 50);
  const connectionsBefore = tlsConnections;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const sendLatencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      while (next < MESSAGES) {
        const i = next++;
        const t = performance.now();
        await send(`m${i}`, `${MARK}${i} ${'x'.repeat(100)}`);
        sendLatencies.push(performance.now() - t);
      }
    }),
  );
  const sentMs = performance.now() - started;
  const cpuAtSent = process.cpuUsage(cpu);
  const allArrived = await everyDestination((d) => d.doneAt !== undefined, DELIVERY_LIMIT_MS);
  const endMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  clearInterval(sampler);
  sample();
  if (session !== undefined) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(profileFile!, JSON.stringify(profile));
    session.disconnect();
  }

  // --- figures ---------------------------------------------------------------------------------
  const all = [...dests.values()];
  const done = all.filter((d) => d.doneAt !== undefined).map((d) => d.doneAt! - started).sort((a, b) => a - b);
  const lastMs = allArrived ? (done[done.length - 1] ?? sentMs) : endMs;
  const sum = (f: (d: Destination) => number) => all.reduce((n, d) => n + f(d) - f(before.get(d.name)!), 0);
  const txns = sum((d) => d.txns);
  const pdus = sum((d) => d.pdus);
  const delivered = sum((d) => d.distinct);
  const cpuMs = (used.user + used.system) / 1000;
  sendLatencies.sort((a, b) => a - b);

  row(
    `send ${fmt(MESSAGES)} messages (PUT /send, ${LANES} connections)`,
    `${seconds(sentMs)} (${fmt(MESSAGES / (sentMs / 1000))} msg/s; p50 ${fmt(quantile(sendLatencies, 0.5), 1)} ms, p99 ${fmt(quantile(sendLatencies, 0.99), 1)} ms)`,
  );
  row(
    'all M at every destination: last / median destination',
    allArrived ? `${seconds(lastMs)} / ${seconds(quantile(done, 0.5))} (last ${seconds(lastMs - sentMs)} after the last send)` : `NOT ALL: ${done.length}/${DESTINATIONS} destinations complete after ${seconds(endMs)}`,
  );
  row('PDUs delivered (distinct messages × destinations)', `${fmt(delivered)} of ${fmt(DESTINATIONS * MESSAGES)}: ${fmt(delivered / (lastMs / 1000))} PDUs/s overall`);
  row('transactions with PDUs / PDUs per transaction', `${fmt(txns)} / ${fmt(pdus / Math.max(1, txns), 1)} (${fmt(txns / Math.max(1, DESTINATIONS), 1)} per destination)`);
  row('  EDU-only transactions; duplicates; 404s; new TLS conns', `${fmt(sum((d) => d.eduTxns))}; ${fmt(sum((d) => d.duplicates))}; ${fmt(unrecognized)}; ${fmt(tlsConnections - connectionsBefore)}`);
  row(
    'process CPU (user+system): while sending / to the end',
    `${seconds((cpuAtSent.user + cpuAtSent.system) / 1000)} / ${seconds(cpuMs)} (${fmt((cpuMs / lastMs) * 100)}% of a core; ${fmt((cpuMs * 1000) / Math.max(1, delivered))} µs per PDU delivered, ${fmt(cpuMs / Math.max(1, txns), 2)} ms per transaction)`,
  );
  row('peak RSS / heap used (hub + fake, one process)', `${fmt(peakRss / 2 ** 20)} MiB / ${fmt(peakHeap / 2 ** 20)} MiB (at the start: ${fmt(rssBefore / 2 ** 20)} / ${fmt(heapBefore / 2 ** 20)} MiB)`);
  if (!allArrived) {
    const behind = all.filter((d) => d.doneAt === undefined).map((d) => `${d.name} ${d.distinct}/${MESSAGES} (queue at ${sender.position(d.name)})`);
    console.log(`  behind: ${behind.slice(0, 10).join(', ')}${behind.length > 10 ? ', …' : ''}`);
    process.exitCode = 1;
  }
} finally {
  await hs.close();
  await fake.close();
  await net.close();
}
