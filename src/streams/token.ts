// Sync tokens: the vector of stream positions a client has seen, as one opaque string. Clients keep
// tokens across server upgrades, so every format ever issued is decoded forever.
//
// The leading letter is the format's version:
// - `s`: version 1, `s<events>_<typing>_<receipts>_<presence>_<account_data>_<to_device>_<device_lists>`,
//   exactly seven decimal positions in that order (fixed forever).
// - `t`: not a sync token; pagination tokens of /messages (rooms/tokens.ts) use it.
// - every other letter is reserved for later versions. A new stream, or a stream written by several
//   processes (one position per writer, read up to the lowest persisted one), takes a new letter
//   with its own decoder in DECODERS; a token of an older version decodes to the positions it names,
//   with 0 for streams it predates.

import { HearthError } from '../protocol/errors.js';
import { PERSISTENT_STREAMS, STREAMS, zeroPositions, type StreamName, type StreamPositions } from './positions.js';

/** The streams of a version 1 token, in its order. */
export const TOKEN_STREAMS: readonly StreamName[] = ['events', 'typing', 'receipts', 'presence', 'account_data', 'to_device', 'device_lists'];

/** The version this server issues. */
const CURRENT_VERSION = 's';

/** Decoders by leading letter; each returns undefined for a malformed body. */
const DECODERS: Readonly<Record<string, (body: string) => Record<StreamName, number> | undefined>> = {
  s: decodeV1,
};

function decodeV1(body: string): Record<StreamName, number> | undefined {
  const parts = body.split('_');
  if (parts.length !== TOKEN_STREAMS.length || !parts.every((p) => /^\d{1,15}$/.test(p))) return undefined;
  const out = zeroPositions();
  TOKEN_STREAMS.forEach((s, i) => (out[s] = Number(parts[i])));
  return out;
}

export function encodeSyncToken(positions: StreamPositions): string {
  return CURRENT_VERSION + TOKEN_STREAMS.map((s) => positions[s]).join('_');
}

/** Whether the token's leading letter is a sync token version (its body may still be malformed). */
export function isSyncToken(token: string): boolean {
  return Object.hasOwn(DECODERS, token.charAt(0));
}

/** Parses a token from a client; a malformed one is 400 M_INVALID_PARAM. */
export function decodeSyncToken(token: string): Record<StreamName, number> {
  const decoded = isSyncToken(token) ? DECODERS[token.charAt(0)]!(token.slice(1)) : undefined;
  if (decoded === undefined) throw HearthError.invalidParam(`Invalid sync token: ${token.slice(0, 100)}`);
  return decoded;
}

// The current version carries every stream.
for (const s of [...STREAMS, ...PERSISTENT_STREAMS]) if (!TOKEN_STREAMS.includes(s)) throw new Error(`stream ${s} missing from sync tokens`);
