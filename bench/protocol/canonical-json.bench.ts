// Canonical JSON encoding speed on realistic events. Prints figures; asserts nothing.
// Run: node --import tsx bench/protocol/canonical-json.bench.ts

import { canonicalJson, canonicalJsonBytes } from '../../src/protocol/canonical-json.js';

const SERVER = 'matrix.example.org';

/** A base64 string of `length` characters, deterministic. */
function b64(seed: number, length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let out = '';
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += alphabet[x % 64];
  }
  return out;
}

const eventId = (seed: number): string => `$${b64(seed, 43)}`;

/** A federation-form m.room.message of about 1 KB, keys in arrival (not sorted) order. */
function roomMessagePdu(body: string): Record<string, unknown> {
  return {
    type: 'm.room.message',
    sender: `@alice:${SERVER}`,
    room_id: `!OGEhHVWSdvArJzumhm:${SERVER}`,
    content: {
      msgtype: 'm.text',
      body,
      format: 'org.matrix.custom.html',
      formatted_body: `<p>${body}</p>`,
      'm.mentions': { user_ids: [`@bob:${SERVER}`] },
    },
    origin_server_ts: 1_732_000_000_123,
    depth: 48_213,
    prev_events: [eventId(1)],
    auth_events: [eventId(2), eventId(3), eventId(4)],
    hashes: { sha256: b64(5, 43) },
    signatures: { [SERVER]: { 'ed25519:a_kXqZ': b64(6, 86) } },
    unsigned: { age_ts: 1_732_000_000_123, transaction_id: 'm1732000000123.42' },
    origin: SERVER,
  };
}

/** An m.room.power_levels state event with `n` users: many keys in one object. */
function powerLevelsPdu(n: number): Record<string, unknown> {
  const users: Record<string, number> = {};
  for (let i = n - 1; i >= 0; i--) users[`@user${i}:server${i % 17}.example`] = i % 3 === 0 ? 50 : 0;
  return { ...roomMessagePdu(''), type: 'm.room.power_levels', state_key: '', content: { users, users_default: 0, ban: 50, kick: 50, redact: 50, events_default: 0, state_default: 50 } };
}

interface Case {
  name: string;
  value: unknown;
}

const cases: Case[] = [
  {
    name: 'm.room.message, ASCII',
    value: roomMessagePdu('Hello everyone, the release notes are up: see the wiki page for the details and the changelog.'),
  },
  {
    name: 'm.room.message, non-ASCII + emoji',
    value: roomMessagePdu('Grüße aus Köln! 日本語もOK 🎉🚀 "quoted" and a\nnew line, then ✓ done 👍🏽 über alles.'),
  },
  { name: 'm.room.power_levels, 1000 users', value: powerLevelsPdu(1000) },
];

/**
 * Runs `fn` in short timed batches for `totalMs` and returns the best µs per call: the batch least
 * disturbed by GC, JIT and other processes on the machine.
 */
function measure(fn: () => unknown, totalMs = 1000): number {
  let batch = 1;
  // Size a batch to take about 2 ms.
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) fn();
    if (Number(process.hrtime.bigint() - t0) > 2e6) break;
    batch *= 2;
  }
  let best = Infinity;
  const end = Date.now() + totalMs;
  while (Date.now() < end) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) fn();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e3 / batch);
  }
  return best;
}

function row(label: string, us: number, reference?: number): void {
  const ratio = reference === undefined ? '' : `  ${(us / reference).toFixed(2)}× the line above`;
  console.log(`  ${label.padEnd(44)} ${Math.round(1e6 / us).toLocaleString('en').padStart(9)} ops/s ${us.toFixed(2).padStart(8)} µs/op${ratio}`);
}

console.log(`canonical JSON, node ${process.version}; best of many short batches`);
for (const c of cases) {
  console.log(`${c.name}: ${canonicalJsonBytes(c.value).length} bytes canonical`);
  // canonicalJson may return an unflattened string; the bytes include flattening and UTF-8 encoding.
  const text = measure(() => JSON.stringify(c.value));
  row('JSON.stringify (unsorted, for reference)', text);
  row('canonicalJson', measure(() => canonicalJson(c.value)), text);
  const bytes = measure(() => Buffer.from(JSON.stringify(c.value), 'utf8'));
  row('Buffer.from(JSON.stringify) (for reference)', bytes);
  row('canonicalJsonBytes', measure(() => canonicalJsonBytes(c.value)), bytes);
}
