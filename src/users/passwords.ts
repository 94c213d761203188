// Password hashing with bcrypt (the native package's async API, which runs on libuv's thread pool
// and so never blocks the event loop). Passwords are NFKC-normalized first so that the same
// password typed on different keyboards matches.
//
// bcrypt reads only the first 72 bytes of its input, so two long passwords with the same start
// would hash alike. It is given a fixed-length digest of the password instead: HMAC-SHA-256 in
// base64 (44 bytes), keyed with a constant so that the digest is not a plain SHA-256 that a leak
// elsewhere could hold and an attacker try against our hashes without knowing the password.
// Such hashes carry DIGEST_PREFIX. Hashes without it (bcrypt of the password itself, as written
// before) still verify passwords of up to 72 bytes and are replaced at the next login; a longer
// password cannot be told apart from others sharing its first 72 bytes with such a hash, so it
// never matches one.

import { createHmac } from 'node:crypto';
import bcrypt from 'bcrypt';
import { HearthError } from '../protocol/errors.js';

/** Longest password accepted, in characters (code points, as Synapse counts). */
export const MAX_PASSWORD_LENGTH = 512;

/** What bcrypt reads of its input. */
const BCRYPT_MAX_BYTES = 72;
const DIGEST_PREFIX = 'hmac-sha256:';
const DIGEST_KEY = 'hearth password';

export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

/** Whether the password has more than MAX_PASSWORD_LENGTH code points. */
function tooLong(password: string): boolean {
  // A string has at least as many UTF-16 units as code points: most need no count.
  if (password.length <= MAX_PASSWORD_LENGTH) return false;
  if (password.length > 2 * MAX_PASSWORD_LENGTH) return true;
  let codePoints = 0;
  for (const _ of password) codePoints++;
  return codePoints > MAX_PASSWORD_LENGTH;
}

/** Checks a password a user chooses; throws 400 for an unusable one. */
export function checkNewPassword(password: string): void {
  if (password.length === 0) throw new HearthError(400, 'M_WEAK_PASSWORD', 'Password must not be empty');
  if (tooLong(password)) throw HearthError.invalidParam(`Password too long (at most ${MAX_PASSWORD_LENGTH} characters)`);
  if (password.includes('\u0000')) throw HearthError.invalidParam('Password must not contain NUL');
}

function digest(password: string): string {
  return createHmac('sha256', DIGEST_KEY).update(normalizePassword(password), 'utf8').digest('base64');
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  return DIGEST_PREFIX + (await bcrypt.hash(digest(password), cost));
}

/** Whether the hash is of the earlier form, which `hashPassword` would now write differently. */
export function isOutdatedPasswordHash(hash: string): boolean {
  return !hash.startsWith(DIGEST_PREFIX);
}

/** Whether the password matches the stored hash; false for a missing or malformed hash. */
export async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  if (hash === null || tooLong(password)) return false;
  try {
    if (!isOutdatedPasswordHash(hash)) return await bcrypt.compare(digest(password), hash.slice(DIGEST_PREFIX.length));
    const normalized = normalizePassword(password);
    if (Buffer.byteLength(normalized, 'utf8') > BCRYPT_MAX_BYTES) return false;
    return await bcrypt.compare(normalized, hash);
  } catch {
    return false;
  }
}
