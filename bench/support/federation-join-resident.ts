// hs1 of bench/federation-join.bench.ts, in a process of its own (forked by the bench, which holds
// the test DNS server and CA): starts hs1 with the certificate the bench issued it, publishing its
// DNS records through the bench (IPC), builds the big room, reports it and then answers the bench's
// commands (its memory, its share of the join, CPU profiles) until told to close.

import { promises as dns } from 'node:dns';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { enc, request } from '../../test/e2e/support/client.js';
import type { DnsRecords, TestDnsServer } from '../../test/support/dns-server.js';
import { type FederationNet, startFederatedServer } from '../../test/support/federation-net.js';
import type { IssuedCertificate } from '../../test/support/test-ca.js';
import { procStatusKb } from './server-child.js';

/** What the bench sends first. */
export interface ResidentInit {
  readonly name: string;
  readonly address: string;
  readonly naming: 'chat' | 'matrix';
  /** The bench's DNS server, `127.0.0.1:<port>`. */
  readonly dnsAddress: string;
  readonly wellKnownPort: number;
  /** PEM of the test CA's certificate (what hs1 trusts). */
  readonly caCert: string;
  /** hs1's certificate, issued by the bench from that CA. */
  readonly certificate: IssuedCertificate;
  /** Members of the room, its owner included. */
  readonly members: number;
  /** Non-member state events, each of its own state key. */
  readonly extraState: number;
  /** Concurrent room-service calls while building the room. */
  readonly lanes: number;
  readonly trace: boolean;
  /** Where CPU profiles go, as `<step>.hs1.cpuprofile`. */
  readonly profileDir?: string;
}

export interface ResidentReady {
  readonly type: 'ready';
  readonly roomId: string;
  readonly alias: string;
  readonly baseUrl: string;
  readonly ownerToken: string;
  readonly joinsMs: number;
  readonly stateMs: number;
  readonly members: number;
}

export interface ResidentStats {
  readonly rss: number;
  /** The largest RSS sampled (every 50 ms) since the last `mark`. */
  readonly peakRss: number;
  /** VmHWM: the process's peak RSS over its life, room building included. */
  readonly hwm: number;
  readonly heapUsed: number;
  readonly makeJoinMs: number;
  readonly sendJoinMs: number;
  readonly backfill: { readonly calls: number; readonly pdus: number };
  readonly txns: { readonly sent: number; readonly pdus: number; readonly failed: number; readonly firstFailure?: string };
}

export type ResidentMessage =
  | { readonly type: 'dns'; readonly name: string; readonly records: DnsRecords }
  | ResidentReady
  | { readonly type: 'reply'; readonly id: number; readonly value?: unknown; readonly error?: string }
  | { readonly type: 'failed'; readonly error: string };

export type ResidentCommand = { readonly id: number } & (
  | { readonly cmd: 'mark' | 'stats' | 'profile-start' | 'close' }
  | { readonly cmd: 'profile-stop'; readonly name: string }
);

const send = (message: ResidentMessage) => process.send!(message);
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });

async function main(init: ResidentInit): Promise<void> {
  // The bench's net as seen from here: its DNS server (records published through the bench), its
  // CA's certificate, the certificate it issued hs1.
  const resolver = new dns.Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([init.dnsAddress]);
  const dir = mkdtempSync(joinPath(tmpdir(), 'hearth-federation-resident-'));
  const remoteDns: TestDnsServer = {
    address: init.dnsAddress,
    records: new Map(),
    queries: [],
    set: (name, records) => send({ type: 'dns', name, records }),
    close: async () => {},
  };
  const net: FederationNet = {
    dns: remoteDns,
    wellKnownPort: init.wellKnownPort,
    resolver,
    ca: {
      cert: init.caCert,
      issue: (names) => {
        if (names.length !== 1 || names[0] !== init.name) throw new Error(`the resident holds a certificate for ${init.name} only, not ${names.join(', ')}`);
        return init.certificate;
      },
    },
    dir,
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
  const hs = await startFederatedServer(net, { name: init.name, address: init.address, naming: init.naming, backend: 'sqlite' });

  const session = init.profileDir === undefined ? undefined : new Session();
  if (session !== undefined) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
  }
  const writeProfile = async (name: string) => {
    const { profile } = await session!.post('Profiler.stop');
    writeFileSync(joinPath(init.profileDir!, `${name}.hs1.cpuprofile`), JSON.stringify(profile));
  };

  // 1. The room: the owner's, public, N - 1 more members and the extra state, all through the room
  // service (real events, no accounts), in lanes (the writer batches what arrives together).
  await session?.post('Profiler.start');
  const owner = await hs.registerUser('alice', 'alice-password');
  const actor = { userId: owner.userId, deviceId: owner.deviceId };
  const rooms = hs.server.services.rooms;
  const { roomId } = await rooms.createRoom(actor, { preset: 'public_chat', name: 'big', roomAliasName: 'big' });
  const inLanes = async (count: number, fn: (i: number) => Promise<unknown>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: init.lanes }, async () => {
        while (next < count) await fn(next++);
      }),
    );
  };
  let t = performance.now();
  await inLanes(init.members - 1, (i) => rooms.join({ userId: `@user${i + 1}:${init.name}`, deviceId: 'BENCH' }, roomId));
  const joinsMs = performance.now() - t;
  t = performance.now();
  await inLanes(init.extraState, (i) => rooms.sendState(actor, roomId, 'org.hearth.bench.state', `key${i}`, { n: i, note: `bench state ${i}` }));
  const stateMs = performance.now() - t;
  if (session !== undefined) await writeProfile('setup');
  const joined = await request(hs.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/joined_members`, undefined, { token: owner.accessToken });
  const members = Object.keys((joined.body as { joined?: object }).joined ?? {}).length;

  // 2. hs1's share of the join, what it backfills, the transactions it sends, from `mark` on.
  const hs1Ms = { make: 0, send: 0 };
  const timing = <F extends (...args: never[]) => Promise<unknown>>(fn: F, what: keyof typeof hs1Ms): F =>
    (async (...args: Parameters<F>) => {
      const t0 = performance.now();
      try {
        return await fn(...args);
      } finally {
        hs1Ms[what] += performance.now() - t0;
      }
    }) as F;
  rooms.makeMembershipForServer = timing(rooms.makeMembershipForServer.bind(rooms), 'make');
  rooms.sendMembershipForServer = timing(rooms.sendMembershipForServer.bind(rooms), 'send');
  const backfill = { calls: 0, pdus: 0 };
  const backfillForServer = rooms.backfillForServer.bind(rooms);
  rooms.backfillForServer = async (...args) => {
    const answer = await backfillForServer(...args);
    backfill.calls++;
    backfill.pdus += answer.pdus.length;
    return answer;
  };
  const client = hs.server.services.federation;
  if (client === undefined) throw new Error(`${init.name} has no federation client`);
  const txns: { pdus: number; outcome: string }[] = [];
  const clientRequest = client.request.bind(client);
  client.request = async (req) => {
    if (!(req.method === 'PUT' && req.path.startsWith('/federation/v1/send/'))) return clientRequest(req);
    const t0 = performance.now();
    const pdus = ((req.body as { pdus?: unknown[] } | undefined)?.pdus ?? []).length;
    const done = (outcome: string) => {
      txns.push({ pdus, outcome });
      if (init.trace) console.log(`    [trace] ${init.name} → ${req.destination} ${req.path}: ${pdus} PDUs, ${outcome} in ${fmt(performance.now() - t0)} ms`);
    };
    try {
      const res = await clientRequest(req);
      done(String(res.status) + (res.status === 200 ? '' : ` ${JSON.stringify(res.body).slice(0, 200)}`));
      return res;
    } catch (err) {
      done(`failed: ${String(err).slice(0, 200)}`);
      throw err;
    }
  };

  let peakRss = process.memoryUsage.rss();
  setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50).unref();

  const answer = async (command: ResidentCommand): Promise<unknown> => {
    switch (command.cmd) {
      case 'mark':
        peakRss = process.memoryUsage.rss();
        hs1Ms.make = hs1Ms.send = 0;
        backfill.calls = backfill.pdus = 0;
        txns.length = 0;
        return undefined;
      case 'stats': {
        const failed = txns.filter((x) => !x.outcome.startsWith('200'));
        const rss = process.memoryUsage.rss();
        const stats: ResidentStats = {
          rss,
          peakRss: Math.max(peakRss, rss),
          hwm: procStatusKb(process.pid, 'VmHWM') * 1024,
          heapUsed: process.memoryUsage().heapUsed,
          makeJoinMs: hs1Ms.make,
          sendJoinMs: hs1Ms.send,
          backfill: { ...backfill },
          txns: {
            sent: txns.length,
            pdus: txns.reduce((n, x) => n + x.pdus, 0),
            failed: failed.length,
            ...(failed[0] !== undefined ? { firstFailure: failed[0].outcome } : {}),
          },
        };
        return stats;
      }
      case 'profile-start':
        await session?.post('Profiler.start');
        return undefined;
      case 'profile-stop':
        if (session !== undefined) await writeProfile(command.name);
        return undefined;
      case 'close':
        await hs.close();
        await net.close();
        return undefined;
    }
  };
  process.on('message', (command: ResidentCommand) => {
    answer(command).then(
      (value) => {
        send({ type: 'reply', id: command.id, value });
        if (command.cmd === 'close') process.disconnect();
      },
      (err: unknown) => send({ type: 'reply', id: command.id, error: String(err) }),
    );
  });
  send({ type: 'ready', roomId, alias: `#big:${init.name}`, baseUrl: hs.baseUrl, ownerToken: owner.accessToken, joinsMs, stateMs, members });
}

if (process.send === undefined) throw new Error('federation-join-resident.ts is forked by bench/federation-join.bench.ts');
process.once('message', (init: ResidentInit) => {
  main(init).catch((err: unknown) => {
    send({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exitCode = 1;
    process.disconnect();
  });
});
