// Events delivered to an application service from a busy room: a real Hearth server (SQLite) with a
// registered service whose user is in the room, and a plain node:http service on loopback that
// answers every transaction at once. The room's owner sends N messages through the room service
// (10 at a time, as a busy room's clients would); each carries its send time, so the service
// measures each event's delivery latency. Prints events delivered per second, transactions and
// events per transaction, latency p50/p99/max and CPU; then the same number sent while the service
// answers 503, delivered as a backlog once it answers again (the pusher's own pace). Then what a queued service costs: the
// server's heap (after a gc) with 1 and with 21 services whose url does not answer, each with the
// same N/4 events waiting. Target: >= 5,000 events/s in transactions of up to 100.
//
//   node --expose-gc --import tsx bench/appservice.bench.ts [events]

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../test/support/server.js';

const EVENTS = Number(process.argv[2] ?? 20_000);
const LANES = 10;
const LIMIT_MS = 120_000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MiB`;
const row = (what: string, value: string) => console.log(`  ${what.padEnd(52)}  ${value}`);
const gc = (globalThis as { gc?: () => void }).gc;

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-appservice-'));

function registration(id: string, url: string): string {
  const file = join(dir, `${id}.yaml`);
  writeFileSync(
    file,
    `id: ${id}\nurl: ${url}\nas_token: ${id}-as-token-0123456789\nhs_token: ${id}-hs-token-0123456789\nsender_localpart: ${id}bot\n` +
      `rate_limited: false\nnamespaces:\n  users:\n    - exclusive: true\n      regex: '@_${id}_.*:localhost'\n`,
  );
  return file;
}

/** A room of `owner`'s that the service's own user has joined, and N messages sent into it. */
async function busyRoom(hs: TestServer, serviceIds: readonly string[]) {
  const rooms = hs.server.services.rooms;
  const owner = await hs.registerUser('owner', 'owner-password');
  const actor = { userId: owner.userId, deviceId: owner.deviceId };
  const { roomId } = await rooms.createRoom(actor, { preset: 'public_chat' });
  for (const id of serviceIds) await rooms.join({ userId: `@${id}bot:localhost`, deviceId: null }, roomId);
  const send = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: LANES }, async () => {
        while (next < count) {
          const i = next++;
          await rooms.sendMessage(actor, roomId, 'm.room.message', { msgtype: 'm.text', body: `m${i}`, sent_us: Math.round(performance.now() * 1000) });
        }
      }),
    );
  };
  return { roomId, send };
}

// 1. Delivery from a busy room.
const latencies: number[] = [];
let transactions = 0;
let firstAt = 0;
let lastAt = 0;
/** While down, the service answers 503 (the events wait in the server). */
let down = false;
const service: Server = createHttpServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
  req.on('end', () => {
    if (down) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errcode":"M_UNKNOWN","error":"down"}');
      return;
    }
    const now = performance.now();
    const events = (JSON.parse(body) as { events: { type: string; content: { sent_us?: number } }[] }).events;
    transactions++;
    for (const e of events) {
      if (e.type !== 'm.room.message' || typeof e.content.sent_us !== 'number') continue;
      latencies.push(now - e.content.sent_us / 1000);
      if (firstAt === 0) firstAt = now;
      lastAt = now;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;

try {
  const hs = await startTestServer({ config: { app_service_config_files: [registration('bridge', url)] }, appServiceRetry: { minMs: 20, maxMs: 50 } });
  try {
    const { send } = await busyRoom(hs, ['bridge']);
    transactions = 0;
    latencies.length = 0;
    console.log(`application service delivery: ${fmt(EVENTS)} messages into one room (SQLite), ${LANES} senders at once; the service on loopback`);
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    await send(EVENTS);
    const sentMs = performance.now() - t0;
    const deadline = Date.now() + LIMIT_MS;
    while (latencies.length < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const used = process.cpuUsage(cpu);
    const doneMs = lastAt - t0;
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
    row('messages sent (room service, wall)', `${fmt(sentMs / 1000, 2)} s (${fmt(EVENTS / (sentMs / 1000))} events/s)`);
    row('delivered to the service', `${fmt(latencies.length)} / ${fmt(EVENTS)} in ${fmt(doneMs / 1000, 2)} s from the first send: ${fmt(latencies.length / (doneMs / 1000))} events/s`);
    row('transactions / events per transaction', `${fmt(transactions)} / ${fmt(latencies.length / Math.max(1, transactions), 1)}`);
    row('delivery latency p50 / p99 / max', `${fmt(pct(50), 1)} ms / ${fmt(pct(99), 1)} ms / ${fmt(sorted[sorted.length - 1] ?? NaN, 1)} ms`);
    row('process CPU (server, senders and service)', `${fmt((used.user + used.system) / 1000 / 1000, 2)} s`);
    if (latencies.length < EVENTS) process.exitCode = 1;

    // The same number again while the service is down, then delivered as a backlog: the pusher's
    // own pace, not the room's.
    down = true;
    await send(EVENTS);
    latencies.length = 0;
    transactions = 0;
    const cpu2 = process.cpuUsage();
    const t1 = performance.now();
    down = false;
    const deadline2 = Date.now() + LIMIT_MS;
    while (latencies.length < EVENTS && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 10));
    const drainMs = performance.now() - t1;
    const used2 = process.cpuUsage(cpu2);
    row('a backlog of the same, once the service is up', `${fmt(latencies.length)} in ${fmt(drainMs / 1000, 2)} s: ${fmt(latencies.length / (drainMs / 1000))} events/s`);
    row('  transactions / events per transaction / CPU', `${fmt(transactions)} / ${fmt(latencies.length / Math.max(1, transactions), 1)} / ${fmt((used2.user + used2.system) / 1000 / 1000, 2)} s`);
    if (latencies.length < EVENTS) process.exitCode = 1;
  } finally {
    await hs.close();
  }

  // 2. What a queued service holds: heap with 1 and with 21 services that do not answer.
  const dead = 'http://127.0.0.1:9';
  const heapWith = async (count: number) => {
    const ids = Array.from({ length: count }, (_, i) => `svc${i}`);
    const hs = await startTestServer({ config: { app_service_config_files: ids.map((id) => registration(id, dead)) }, appServiceRetry: { minMs: 50, maxMs: 500 } });
    try {
      const { send } = await busyRoom(hs, ids);
      await send(Math.floor(EVENTS / 4));
      await new Promise((r) => setTimeout(r, 1500));
      gc?.();
      return process.memoryUsage().heapUsed;
    } finally {
      await hs.close();
    }
  };
  const one = await heapWith(1);
  const many = await heapWith(21);
  row(`heap with 1 / 21 services down, ${fmt(Math.floor(EVENTS / 4))} events waiting`, `${mib(one)} / ${mib(many)}: ${mib((many - one) / 20)} per queued service${gc ? '' : ' (no --expose-gc: not settled)'}`);
} finally {
  service.close();
  rmSync(dir, { recursive: true, force: true });
}
