// Access tokens: 256 random bits, handed to the client once and stored only as their SHA-256.
// Authentication runs on every request, so resolved tokens are cached in memory (bounded, least
// recently used first out); every change that revokes a token or changes what it grants drops the
// user's cached entries.

import * as nodeCrypto from 'node:crypto';
import { createHash, randomBytes } from 'node:crypto';
import type { Requester } from './requester.js';

const TOKEN_PREFIX = 'hth_';

export function newAccessToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

// Every request hashes its token: the one-shot digest skips the Hash object. It came with Node
// 20.12, so it is looked up rather than imported by name.
const oneShotHash: typeof nodeCrypto.hash | undefined = nodeCrypto.hash;

export function hashAccessToken(token: string): string {
  return oneShotHash !== undefined ? oneShotHash('sha256', token, 'hex') : createHash('sha256').update(token, 'utf8').digest('hex');
}

export interface CachedToken {
  readonly requester: Requester;
  /** When the token stops working (ms since the epoch), or null. */
  readonly validUntilTs: number | null;
  readonly cachedAt: number;
  /** When this process last recorded the device as seen. */
  lastSeenWrite: number;
}

export interface TokenCacheOptions {
  /** Most tokens kept. Default 10,000. */
  readonly maxEntries?: number;
  /**
   * How long an entry is trusted before the database is asked again. Bounds how long another
   * process's logout can go unnoticed here. Default 5 minutes.
   */
  readonly maxAgeMs?: number;
}

export class TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  private readonly byUser = new Map<string, Set<string>>();
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  /** Moves on every invalidation, so a lookup that raced one does not cache what it read. */
  private epochValue = 0;
  /** Lookups that found a live entry, and that did not (for metrics). */
  hits = 0;
  misses = 0;

  constructor(options: TokenCacheOptions = {}) {
    this.maxEntries = Math.max(1, options.maxEntries ?? 10_000);
    this.maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  }

  get epoch(): number {
    return this.epochValue;
  }

  get size(): number {
    return this.entries.size;
  }

  get(tokenHash: string, now: number): CachedToken | undefined {
    const entry = this.entries.get(tokenHash);
    if (!entry) {
      this.misses++;
      return undefined;
    }
    if (now - entry.cachedAt > this.maxAgeMs) {
      this.remove(tokenHash, entry);
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Re-insert so that Map order is least recently used first.
    this.entries.delete(tokenHash);
    this.entries.set(tokenHash, entry);
    return entry;
  }

  /** Caches a lookup made when `epoch` was current; skipped when an invalidation happened since. */
  set(tokenHash: string, entry: CachedToken, epoch: number): void {
    if (epoch !== this.epochValue) return;
    const old = this.entries.get(tokenHash);
    if (old) this.remove(tokenHash, old);
    this.entries.set(tokenHash, entry);
    let hashes = this.byUser.get(entry.requester.userId);
    if (!hashes) this.byUser.set(entry.requester.userId, (hashes = new Set()));
    hashes.add(tokenHash);
    while (this.entries.size > this.maxEntries) {
      const [oldestHash, oldest] = this.entries.entries().next().value as [string, CachedToken];
      this.remove(oldestHash, oldest);
    }
  }

  invalidateUser(userId: string): void {
    this.epochValue++;
    const hashes = this.byUser.get(userId);
    if (!hashes) return;
    for (const h of hashes) this.entries.delete(h);
    this.byUser.delete(userId);
  }

  clear(): void {
    this.epochValue++;
    this.entries.clear();
    this.byUser.clear();
  }

  private remove(tokenHash: string, entry: CachedToken): void {
    this.entries.delete(tokenHash);
    const hashes = this.byUser.get(entry.requester.userId);
    if (hashes) {
      hashes.delete(tokenHash);
      if (hashes.size === 0) this.byUser.delete(entry.requester.userId);
    }
  }
}
