// The streams and their positions. Every change a sync or a stream consumer must see gets the next
// position on its stream. The persistent streams keep their counters in the database
// (`stream_positions`, allocated by storage/streams.ts inside the writing transaction, which holds the
// stream's row until commit, so positions become visible in order); typing lives in memory only.
//
// The names and the SQL stay in storage/, which sits below this layer and allocates positions inside
// its own transactions; this module is where the services take them from.

import type { PersistentStream } from '../storage/streams.js';

export { PERSISTENT_STREAMS, allocateStreamPosition, currentStreamPositions, type PersistentStream } from '../storage/streams.js';

export type StreamName = PersistentStream | 'typing';

/** Every stream, in the order of the version 1 sync token (token.ts). */
export const STREAMS: readonly StreamName[] = ['events', 'typing', 'receipts', 'presence', 'account_data', 'to_device', 'device_lists'];

export type StreamPositions = Readonly<Record<StreamName, number>>;

export function zeroPositions(): Record<StreamName, number> {
  return Object.fromEntries(STREAMS.map((s) => [s, 0])) as Record<StreamName, number>;
}

/** True when `a` is ahead of `b` in any stream. */
export function isAhead(a: StreamPositions, b: StreamPositions): boolean {
  return STREAMS.some((s) => a[s] > b[s]);
}
