// Access tokens to requesters. The hot path is a cache hit: one SHA-256 and one Map lookup.
// A miss reads the token with its user's flags in one query. Devices' last-seen time, address and
// user agent are written at most once a minute per token, without holding up the request.

import type { Kysely } from 'kysely';
import type { Authenticator, RequestOrigin, Requester } from './requester.js';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import { findTokenOwner, insertAccessToken } from '../storage/accounts/access-tokens.js';
import { touchDevice } from '../storage/accounts/devices.js';
import { hashAccessToken, newAccessToken, TokenCache, type TokenCacheOptions } from './tokens.js';

const LAST_SEEN_INTERVAL_MS = 60_000;
/** User agents are kept to this many characters: enough to tell clients apart, never a large row. */
const MAX_USER_AGENT_LENGTH = 512;

function userAgentOf(req: RequestOrigin): string | null {
  // Callers outside the HTTP layer (the command line, tests) may pass a request without headers.
  const ua = req.headers?.['user-agent'];
  const value = Array.isArray(ua) ? ua[0] : ua;
  return value === undefined || value === '' ? null : value.slice(0, MAX_USER_AGENT_LENGTH);
}

export interface AccessTokenAuthenticatorDeps {
  readonly db: Kysely<Schema>;
  readonly now: () => number;
  readonly cache?: TokenCacheOptions;
}

export function unknownToken(softLogout = false): HearthError {
  return new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token', softLogout ? { soft_logout: true } : {});
}

export class AccessTokenAuthenticator {
  private readonly cache: TokenCache;

  constructor(private readonly deps: AccessTokenAuthenticatorDeps) {
    this.cache = new TokenCache(deps.cache);
  }

  /** Number of tokens held in memory (for metrics and tests). */
  get cachedTokens(): number {
    return this.cache.size;
  }

  /** Token cache lookups so far that found the token, and that did not. */
  get cacheLookups(): { hits: number; misses: number } {
    return { hits: this.cache.hits, misses: this.cache.misses };
  }

  readonly authenticate: Authenticator = async (accessToken: string, req: RequestOrigin): Promise<Requester> => {
    const now = this.deps.now();
    const hash = hashAccessToken(accessToken);
    let entry = this.cache.get(hash, now);
    if (!entry) {
      const epoch = this.cache.epoch;
      const owner = await findTokenOwner(this.deps.db, hash);
      if (!owner || owner.deactivated) throw unknownToken();
      const requester: Requester = Object.freeze({
        userId: owner.userId,
        deviceId: owner.deviceId,
        isGuest: owner.isGuest,
        isAdmin: owner.isAdmin,
        tokenId: owner.tokenId,
      });
      entry = { requester, validUntilTs: owner.validUntilTs, cachedAt: now, lastSeenWrite: 0 };
      this.cache.set(hash, entry, epoch);
    }
    if (entry.validUntilTs !== null && entry.validUntilTs <= now) throw unknownToken(true);
    if (now - entry.lastSeenWrite >= LAST_SEEN_INTERVAL_MS && entry.requester.deviceId !== null) {
      entry.lastSeenWrite = now;
      // Best effort: a lost last-seen write must not fail the request.
      touchDevice(this.deps.db, entry.requester.userId, entry.requester.deviceId, now, req.remoteAddress || null, userAgentOf(req)).catch(() => {});
    }
    return entry.requester;
  };

  /** Issues a new access token for the device; the plain token is returned once and never stored. */
  async issue(db: Kysely<Schema>, userId: string, deviceId: string, validUntilTs: number | null = null): Promise<string> {
    const token = newAccessToken();
    await insertAccessToken(db, hashAccessToken(token), userId, deviceId, this.deps.now(), validUntilTs);
    return token;
  }

  /** Forgets the user's cached tokens; call after revoking tokens or changing the account's flags. */
  invalidateUser(userId: string): void {
    this.cache.invalidateUser(userId);
  }
}
