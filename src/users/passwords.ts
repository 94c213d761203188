// Password hashing with bcrypt (the native package's async API, which runs on libuv's thread pool
// and so never blocks the event loop). Passwords are NFKC-normalized first so that the same
// password typed on different keyboards matches.

import bcrypt from 'bcrypt';
import { HearthError } from '../protocol/errors.js';

/** Longest password accepted, in characters (bcrypt itself reads only the first 72 bytes). */
export const MAX_PASSWORD_LENGTH = 512;

export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

/** Checks a password a user chooses; throws 400 for an unusable one. */
export function checkNewPassword(password: string): void {
  if (password.length === 0) throw new HearthError(400, 'M_WEAK_PASSWORD', 'Password must not be empty');
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw HearthError.invalidParam(`Password too long (at most ${MAX_PASSWORD_LENGTH} characters)`);
  }
  if (password.includes('\u0000')) throw HearthError.invalidParam('Password must not contain NUL');
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(normalizePassword(password), cost);
}

/** Whether the password matches the stored hash; false for a missing or malformed hash. */
export async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  if (hash === null || password.length > MAX_PASSWORD_LENGTH) return false;
  try {
    return await bcrypt.compare(normalizePassword(password), hash);
  } catch {
    return false;
  }
}
