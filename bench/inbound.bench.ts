// Throughput of checks 1–3 on received PDUs (format, signatures, content hash) on one thread: the
// ceiling the inbound path (target ≥ 3,000 PDUs/s) has before storage and the auth checks. Prints
// figures, asserts nothing. Run: npm run bench:inbound

import { checkContentHash, hashAndSignEvent } from '../src/protocol/hashes.js';
import type { Pdu } from '../src/protocol/events.js';
import { checkPduFormat } from '../src/protocol/pdu-format.js';
import { roomVersions } from '../src/protocol/room-versions.js';
import { signingKeyFromSeed } from '../src/protocol/signing.js';
import { StaticKeyRing } from '../src/rooms/input/key-ring.js';
import { checkReceivedPdu, checkReceivedPdus } from '../src/rooms/input/pdu-checks.js';
import { messageDraft } from './support/message-pdu.js';

const version = roomVersions['10']!;
const origin = 'matrix.example.org';
const key = signingKeyFromSeed('ed25519:a_bench', new Uint8Array(32).fill(7));
const ring = new StaticKeyRing().add(origin, key.keyId, { publicKey: key.publicKey, validUntilTs: Number.MAX_SAFE_INTEGER });

// As received: parsed from JSON, so no object is shared with the signer.
const received: unknown[] = Array.from({ length: 1024 }, (_, i) =>
  JSON.parse(JSON.stringify(hashAndSignEvent(messageDraft(i), origin, key, version))),
);
const bytes = Buffer.byteLength(JSON.stringify(received[0]));

type Case = { label: string; perCall: number; fn: (i: number) => Promise<unknown> | unknown; best: number };
const cases: Case[] = [];
function add(label: string, fn: Case['fn'], perCall = 1): Case {
  const c = { label, fn, perCall, best: 0 };
  cases.push(c);
  return c;
}

let dropped = 0;
add('format only (checkPduFormat)', (i) => checkPduFormat(received[i & 1023], version));
add('content hash only (checkContentHash)', (i) => checkContentHash(received[i & 1023] as Pdu, version));
const one = add('checkReceivedPdu: format + signature + hash', async (i) => {
  const r = await checkReceivedPdu(received[i & 1023], version, ring);
  if (!r.ok) dropped++;
});
const batches = Array.from({ length: 1024 / 50 }, (_, b) => received.slice(b * 50, b * 50 + 50).map((json) => ({ json, version })));
const batch = add(
  'checkReceivedPdus, transactions of 50',
  async (i) => {
    for (const r of await checkReceivedPdus(batches[i % batches.length]!, ring)) if (!r.ok) dropped++;
  },
  50,
);

/** Best rate of several interleaved rounds, per second of this process's CPU time. */
async function run(rounds: number, perRound: number): Promise<void> {
  for (const c of cases) for (let i = 0; i < 500; i++) await c.fn(i); // warm up
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const calls = Math.max(1, Math.round(perRound / c.perCall));
      const start = process.cpuUsage();
      for (let i = 0; i < calls; i++) await c.fn(i);
      const used = process.cpuUsage(start);
      c.best = Math.max(c.best, (calls * c.perCall) / ((used.user + used.system) / 1e6));
    }
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en').padStart(9);
const ROUNDS = 5;
const PER_ROUND = 5000;
console.log(`room version ${version.id}; m.room.message PDU of ${bytes} bytes (JSON); best of ${ROUNDS} rounds of ${PER_ROUND} PDUs, per CPU-second\n`);
await run(ROUNDS, PER_ROUND);
for (const c of cases) console.log(`${c.label.padEnd(46)} ${fmt(c.best)} PDUs/s`);
if (dropped > 0) console.log(`(!) ${dropped} PDUs dropped`);
console.log(`\nchecks 1–3 ${fmt(Math.min(one.best, batch.best))} PDUs/s on one core (inbound target 3,000)`);
