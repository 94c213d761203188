// Pagination tokens of /messages, /context and /members: `t<position>` names the point just after
// the event at that position of the events stream. `t0` is before every event this server sent or
// received live; backfilled events have negative positions (`t-5`), older the lower they are. A sync
// token (`s<events>_...`, sync/token.ts) is accepted wherever one is read and names its events position.

import { HearthError } from '../protocol/errors.js';
import { decodeSyncToken } from '../sync/token.js';

export function encodeTimelineToken(position: number): string {
  return `t${position}`;
}

/** The events-stream position a token names; 400 M_INVALID_PARAM for anything else. */
export function decodeTimelineToken(token: string): number {
  if (/^t-?\d{1,15}$/.test(token)) return Number(token.slice(1));
  if (token.startsWith('s')) return decodeSyncToken(token).events;
  throw HearthError.invalidParam(`Invalid pagination token: ${token.slice(0, 100)}`);
}
