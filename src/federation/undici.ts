// undici, loaded on first use: importing it costs about 20 MB of memory, which a server that never
// talks to another one (or has not yet) need not carry.

import type * as Undici from 'undici';

let loading: Promise<typeof Undici> | undefined;

export function loadUndici(): Promise<typeof Undici> {
  return (loading ??= import('undici'));
}
