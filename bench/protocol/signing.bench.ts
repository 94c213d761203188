// Throughput of event signing and verification on one thread: prints figures, asserts nothing.
// Run: node --import tsx bench/protocol/signing.bench.ts

import sodium from 'sodium-native';
import { canonicalJson } from '../../src/protocol/canonical-json.js';
import type { Pdu } from '../../src/protocol/events.js';
import {
  computeContentHash,
  computeEventId,
  hashAndSignEvent,
  referenceHash,
  verifyEventSignature,
} from '../../src/protocol/hashes.js';
import { roomVersions } from '../../src/protocol/room-versions.js';
import { signingKeyFromSeed } from '../../src/protocol/signing.js';
import { messageDraft as draft } from '../support/message-pdu.js';

const version = roomVersions['10']!;
const key = signingKeyFromSeed('ed25519:a_bench', new Uint8Array(32).fill(7));
const other = signingKeyFromSeed('ed25519:auto', new Uint8Array(32).fill(9));

type Case = { label: string; fn: (i: number) => unknown; best: number };
const cases: Case[] = [];
function add(label: string, fn: (i: number) => unknown): Case {
  const c = { label, fn, best: 0 };
  cases.push(c);
  return c;
}

/**
 * Runs every case for several interleaved rounds and keeps each one's best rate. Rates are per
 * second of this process's CPU time, not wall-clock time, so that other processes competing for
 * the cores do not distort the figures (everything here runs on one thread).
 */
function run(rounds: number, perRound: number): void {
  for (const c of cases) for (let i = 0; i < 2000; i++) c.fn(i); // warm up
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const start = process.cpuUsage();
      for (let i = 0; i < perRound; i++) c.fn(i);
      const used = process.cpuUsage(start);
      const seconds = (used.user + used.system) / 1e6;
      c.best = Math.max(c.best, perRound / seconds);
    }
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en').padStart(9);

const drafts = Array.from({ length: 1024 }, (_, i) => draft(i));
// Signed by the sender's server and by a second server, as events arriving over federation are.
const signed: Pdu[] = drafts.map((d) =>
  hashAndSignEvent(hashAndSignEvent(d, 'matrix.example.org', key, version), 'other.example.net', other, version),
);
const bytes = Buffer.byteLength(JSON.stringify(signed[0]));

const message = Buffer.from(JSON.stringify(signed[0]));
const sig = Buffer.alloc(64);
const pk = Buffer.from(key.publicKey);
const sk = Buffer.from(key.secretKey);
sodium.crypto_sign_detached(sig, message, sk);
let failures = 0;
const rawSign = add('raw ed25519 sign (sodium-native, same size)', () => sodium.crypto_sign_detached(sig, message, sk));
const rawVerify = add('raw ed25519 verify (sodium-native, same size)', () =>
  sodium.crypto_sign_verify_detached(sig, message, pk),
);
add('canonical JSON of the full event', (i) => canonicalJson(signed[i & 1023]));
add('content hash', (i) => computeContentHash(signed[i & 1023]!, version));
add('reference hash', (i) => referenceHash(signed[i & 1023]!, version));
add('event id (v4+)', (i) => computeEventId(signed[i & 1023]!, version));
const sign = add('sign: hashAndSignEvent', (i) => hashAndSignEvent(drafts[i & 1023]!, 'matrix.example.org', key, version));
const verify = add('verify: verifyEventSignature', (i) => {
  if (!verifyEventSignature(signed[i & 1023]!, 'matrix.example.org', 'ed25519:a_bench', key.publicKey, version)) failures++;
});

const ROUNDS = 5;
const PER_ROUND = 8000;
console.log(`room version ${version.id}; m.room.message PDU of ${bytes} bytes (JSON); best of ${ROUNDS} rounds of ${PER_ROUND}, per CPU-second\n`);
run(ROUNDS, PER_ROUND);
for (const c of cases) console.log(`${c.label.padEnd(48)} ${fmt(c.best)} /s`);
if (failures > 0) console.log(`(!) ${failures} verifications failed`);
console.log(
  `\nsign   ${fmt(sign.best)} /s (target 20,000) = ${((100 * sign.best) / rawSign.best).toFixed(0)}% of raw ed25519 sign`,
);
console.log(
  `verify ${fmt(verify.best)} /s (target 15,000) = ${((100 * verify.best) / rawVerify.best).toFixed(0)}% of raw ed25519 verify`,
);
