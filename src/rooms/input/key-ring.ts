// The port through which the checks on received PDUs get other servers' signing keys. Federation
// implements it (a key cache in storage, fetched from the servers themselves or from notaries);
// the checks only say which keys they need and for when.

import type { ServerVerifyKey, VerifyKeyLookup } from '../../protocol/event-signatures.js';

/** One key a signature was made with, and the time it must have been valid at. */
export interface KeyRequest {
  readonly serverName: string;
  /** `ed25519:<version>`, as the signature names it. */
  readonly keyId: string;
  /**
   * Milliseconds since the epoch: the event's origin_server_ts in room versions that enforce key
   * validity (v5+), 0 before them (any key the server ever published will do). A cached key whose
   * validity ends before this is worth fetching again; one that cannot be renewed is still returned.
   */
  readonly validAt: number;
}

/** Keys found, by server name, then key id. */
export type FoundKeys = ReadonlyMap<string, ReadonlyMap<string, ServerVerifyKey>>;

export interface KeyRing {
  /**
   * The verify keys asked for, from cache or fetched. A key from `verify_keys` is valid until the
   * answer's `valid_until_ts`, one from `old_verify_keys` until its `expired_ts`. A key that cannot
   * be found is left out of the answer: missing keys are not an error.
   */
  verifyKeys(requests: readonly KeyRequest[]): Promise<FoundKeys>;
}

/** The lookup `checkEventSignatures` reads, over keys a ring found. */
export function lookupIn(found: FoundKeys): VerifyKeyLookup {
  return (serverName, keyId) => found.get(serverName)?.get(keyId);
}

/**
 * A key ring of keys known in advance and never fetched: this server's own keys, or the keys of
 * servers that tests and benchmarks stand in for.
 */
export class StaticKeyRing implements KeyRing {
  private readonly keys = new Map<string, Map<string, ServerVerifyKey>>();

  add(serverName: string, keyId: string, key: ServerVerifyKey): this {
    let byId = this.keys.get(serverName);
    if (byId === undefined) this.keys.set(serverName, (byId = new Map()));
    byId.set(keyId, key);
    return this;
  }

  /** Every key it holds: more than asked for does no harm. */
  verifyKeys(_requests: readonly KeyRequest[]): Promise<FoundKeys> {
    return Promise.resolve(this.keys);
  }
}

/**
 * Keys known in advance first, the rest from another ring (federation's, which fetches): a
 * server whose keys are known in advance is never asked.
 */
export class KnownFirstKeyRing implements KeyRing {
  constructor(
    private readonly known: KeyRing,
    private readonly fetched: KeyRing,
  ) {}

  async verifyKeys(requests: readonly KeyRequest[]): Promise<FoundKeys> {
    const known = await this.known.verifyKeys(requests);
    const rest = requests.filter((r) => !known.get(r.serverName)?.has(r.keyId));
    if (rest.length === 0) return known;
    const fetched = await this.fetched.verifyKeys(rest);
    const out = new Map<string, Map<string, ServerVerifyKey>>();
    for (const found of [fetched, known]) {
      for (const [server, keys] of found) {
        let byId = out.get(server);
        if (byId === undefined) out.set(server, (byId = new Map()));
        for (const [id, key] of keys) byId.set(id, key);
      }
    }
    return out;
  }
}
