// Shared-secret registration (the admin API's `/register`, as Synapse defines it): the caller
// fetches a single-use nonce, then proves knowledge of the configured secret with
// HMAC-SHA1(secret, nonce \0 username \0 password \0 "admin"|"notadmin" [\0 user_type]), hex.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const NONCE_LIFETIME_MS = 60_000;
const MAX_NONCES = 1000;

export interface SharedSecretFields {
  readonly nonce: string;
  readonly username: string;
  readonly password: string;
  readonly admin: boolean;
  readonly userType?: string | null;
}

export function sharedSecretMac(secret: string, f: SharedSecretFields): string {
  const mac = createHmac('sha1', Buffer.from(secret, 'utf8'));
  mac.update(f.nonce, 'utf8');
  mac.update('\0');
  mac.update(f.username, 'utf8');
  mac.update('\0');
  mac.update(f.password, 'utf8');
  mac.update('\0');
  mac.update(f.admin ? 'admin' : 'notadmin');
  if (f.userType !== undefined && f.userType !== null) {
    mac.update('\0');
    mac.update(f.userType, 'utf8');
  }
  return mac.digest('hex');
}

/** Constant-time comparison of the expected MAC with the one given. */
export function macMatches(expected: string, given: string): boolean {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(given, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Single-use nonces, kept in memory for a minute (the GET and the POST come close together). */
export class NonceStore {
  private readonly issued = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  issue(): string {
    const now = this.now();
    for (const [nonce, at] of this.issued) {
      if (now - at <= NONCE_LIFETIME_MS && this.issued.size < MAX_NONCES) break;
      this.issued.delete(nonce);
    }
    const nonce = randomBytes(24).toString('hex');
    this.issued.set(nonce, now);
    return nonce;
  }

  /** Uses the nonce up; false when it was never issued, already used or expired. */
  take(nonce: string): boolean {
    const at = this.issued.get(nonce);
    if (at === undefined) return false;
    this.issued.delete(nonce);
    return this.now() - at <= NONCE_LIFETIME_MS;
  }
}
