// Sync tokens: the vector of stream positions a client has seen, as one opaque string
// `s<events>_<typing>_<receipts>_<presence>_<account_data>_<to_device>_<device_lists>`.

import { HearthError } from '../protocol/errors.js';
import { PERSISTENT_STREAMS, type PersistentStream } from '../storage/streams.js';

export type StreamName = PersistentStream | 'typing';

/** Token order: fixed forever, since clients keep tokens across server upgrades. */
export const TOKEN_STREAMS: readonly StreamName[] = [
  'events',
  'typing',
  'receipts',
  'presence',
  'account_data',
  'to_device',
  'device_lists',
];

export type StreamPositions = Readonly<Record<StreamName, number>>;

export function zeroPositions(): Record<StreamName, number> {
  return Object.fromEntries(TOKEN_STREAMS.map((s) => [s, 0])) as Record<StreamName, number>;
}

export function encodeSyncToken(positions: StreamPositions): string {
  return 's' + TOKEN_STREAMS.map((s) => positions[s]).join('_');
}

/** Parses a token from a client; a malformed one is 400 M_INVALID_PARAM. */
export function decodeSyncToken(token: string): Record<StreamName, number> {
  const parts = token.startsWith('s') ? token.slice(1).split('_') : [];
  if (parts.length !== TOKEN_STREAMS.length || !parts.every((p) => /^\d{1,15}$/.test(p))) {
    throw HearthError.invalidParam(`Invalid sync token: ${token.slice(0, 100)}`);
  }
  const out = zeroPositions();
  TOKEN_STREAMS.forEach((s, i) => (out[s] = Number(parts[i])));
  return out;
}

/** True when `a` is ahead of `b` in any stream. */
export function isAhead(a: StreamPositions, b: StreamPositions): boolean {
  return TOKEN_STREAMS.some((s) => a[s] > b[s]);
}

// Keep the persistent list and the token list in step.
for (const s of PERSISTENT_STREAMS) if (!TOKEN_STREAMS.includes(s)) throw new Error(`stream ${s} missing from sync tokens`);
