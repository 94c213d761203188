// Errors of the command line: each prints its message alone (no stack); usage errors exit 2.

import { userInfo } from 'node:os';

/** The command was called wrongly: exit 2. */
export class UsageError extends Error {}

/** The operator interrupted a prompt (Ctrl-C): exit 130, as a shell does. */
export class InterruptedError extends Error {}

/** The server could not start for a reason the operator can fix: exit 1. */
export class StartupError extends Error {}

const UNWRITABLE: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
};

/**
 * A file-system failure while starting (the data folder, the signing key), said with the path, the
 * reason and what places it; undefined for other errors.
 */
export function explainFileFailure(err: unknown, dataDir: string): string | undefined {
  const { code, path } = (err ?? {}) as { code?: unknown; path?: unknown };
  if (!(err instanceof Error) || typeof code !== 'string' || typeof path !== 'string') return undefined;
  const reason = UNWRITABLE[code];
  if (reason === undefined) return undefined;
  const user = userInfo();
  return (
    `cannot write ${path}: ${reason} for the user running Hearth (${user.username}, uid ${user.uid}). ` +
    `Hearth keeps its files in global.data_dir (${dataDir}) unless their own keys name other places: ` +
    'make that folder writable by this user, or set global.data_dir to one it can write.'
  );
}
