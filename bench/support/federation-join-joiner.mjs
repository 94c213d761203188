// hs2 of bench/federation-join.bench.ts, the joining server, in a process of its own and built
// (dist/, with the node options of `npm start`): what an operator runs, so its memory figures are
// the server's alone, without the bench's DNS server, its HTTP client or a TypeScript loader.
// Plain JavaScript for that reason. The bench sends the configuration file it wrote and the test
// net's reach (its DNS server, its CA); this process starts the server, registers the bench's
// users and then answers the bench's commands (its memory and CPU, what hs1 pushed to its room
// service, CPU profiles) until told to close.

import { promises as dns } from 'node:dns';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

const dist = new URL('../../dist/', import.meta.url);
const { loadConfig } = await import(new URL('config/index.js', dist).href);
const { createServer } = await import(new URL('context.js', dist).href);

const SAMPLE_MS = 50;
const send = (message) => process.send(message);
const hwm = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${process.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

async function main(init) {
  const resolver = new dns.Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([init.dnsAddress]);
  const { config } = loadConfig(init.configPath, {});
  const server = await createServer(config, {
    closeGraceMs: 1000,
    logger: false,
    federation: { dns: resolver, ca: init.caCert, wellKnownPort: init.wellKnownPort },
  });
  const listeners = await server.listen();
  const http = listeners.find((l) => !l.tls);
  const tls = listeners.find((l) => l.tls);
  const { accounts, rooms } = server.services;
  const users = {};
  for (const localpart of init.users) {
    const userId = await accounts.registerUser({ localpart, password: `${localpart}-password`, admin: false });
    const login = await accounts.login({ type: 'm.login.password', identifier: { identifier: { type: 'm.id.user', user: userId } }, password: `${localpart}-password` });
    users[localpart] = { userId: login.userId, accessToken: login.accessToken, deviceId: login.deviceId };
  }

  // What hs1 pushes to the room service (transactions' PDUs), from `mark` on. CPU is counted from
  // the process's start.
  const pushed = { calls: 0, pdus: 0, ms: 0 };
  const receive = rooms.receive.bind(rooms);
  rooms.receive = async (origin, pdus) => {
    const t = performance.now();
    try {
      return await receive(origin, pdus);
    } finally {
      pushed.calls++;
      pushed.pdus += pdus.length;
      pushed.ms += performance.now() - t;
    }
  };

  // The peak RSS sampled, and what the process held then.
  let peak = process.memoryUsage();
  setInterval(() => {
    const now = process.memoryUsage();
    if (now.rss > peak.rss) peak = now;
  }, SAMPLE_MS).unref();
  const session = init.profileDir === undefined ? undefined : new Session();
  if (session !== undefined) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
  }

  const answer = async (command) => {
    switch (command.cmd) {
      case 'mark':
        globalThis.gc?.();
        peak = process.memoryUsage();
        pushed.calls = pushed.pdus = pushed.ms = 0;
        return { rss: peak.rss, heapUsed: peak.heapUsed };
      case 'stats': {
        const now = process.memoryUsage();
        if (now.rss > peak.rss) peak = now;
        const used = process.cpuUsage();
        const atPeak = { heapTotal: peak.heapTotal, heapUsed: peak.heapUsed, external: peak.external };
        return { rss: now.rss, peakRss: peak.rss, atPeak, hwm: hwm(), heapUsed: now.heapUsed, cpuMs: (used.user + used.system) / 1000, pushed: { ...pushed } };
      }
      case 'gc':
        globalThis.gc?.();
        return { heapUsed: process.memoryUsage().heapUsed };
      case 'profile-start':
        await session?.post('Profiler.start');
        return undefined;
      case 'profile-stop':
        if (session !== undefined) {
          const { profile } = await session.post('Profiler.stop');
          writeFileSync(join(init.profileDir, `${command.name}.cpuprofile`), JSON.stringify(profile));
        }
        return undefined;
      case 'close':
        await server.close();
        return undefined;
    }
    throw new Error(`unknown command ${command.cmd}`);
  };
  process.on('message', (command) => {
    answer(command).then(
      (value) => {
        send({ type: 'reply', id: command.id, value });
        if (command.cmd === 'close') process.disconnect();
      },
      (err) => send({ type: 'reply', id: command.id, error: String(err) }),
    );
  });
  send({ type: 'ready', baseUrl: http.url, tlsPort: tls.port, users, gc: typeof globalThis.gc === 'function' });
}

if (process.send === undefined) throw new Error('federation-join-joiner.mjs is forked by bench/federation-join.bench.ts');
process.once('message', (init) => {
  main(init).catch((err) => {
    send({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exitCode = 1;
    process.disconnect();
  });
});
