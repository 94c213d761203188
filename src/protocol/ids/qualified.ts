// The `<sigil><localpart>:<server name>` framing that user IDs, room IDs, aliases and v1–v2 event
// IDs share.

import { MAX_ID_BYTES, utf8Length } from './common.js';
import { serverNameProblem } from './server-name.js';

export type Framed = { readonly local: string; readonly problem?: undefined } | { readonly problem: string };

/**
 * Checks `<sigil><localpart>:<server name>`: the sigil, the byte limit and the server name. The
 * localpart never holds `:`, so the first colon ends it; the server name may hold more (port, IPv6).
 */
export function frame(s: string, sigil: string, what: string): Framed {
  if (s.length === 0) return { problem: 'is empty' };
  if (s[0] !== sigil) return { problem: `must start with '${sigil}'` };
  const bytes = utf8Length(s);
  if (bytes > MAX_ID_BYTES) return { problem: `is ${bytes} bytes long; the limit is ${MAX_ID_BYTES}` };
  const colon = s.indexOf(':');
  if (colon === -1) return { problem: `has no ':' between the ${what} and the server name` };
  const serverProblem = serverNameProblem(s.slice(colon + 1));
  if (serverProblem !== undefined) return { problem: `server name ${serverProblem}` };
  return { local: s.slice(1, colon) };
}

/** The localpart rule room IDs, aliases, v1 event IDs and non-compliant user IDs share. */
export function opaqueLocalProblem(local: string, what: string): string | undefined {
  if (local.includes('\0')) return `${what} contains NUL`;
  if (!local.isWellFormed()) return `${what} contains a lone surrogate`;
  return undefined;
}
