// Helpers shared by the benchmarks that run the server as a child process.

import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const root = new URL('../..', import.meta.url).pathname;

/** dist/ is fresh when every source file has a compiled file at least as new. */
export function distIsFresh(): boolean {
  const src = join(root, 'src');
  let any = false;
  for (const entry of readdirSync(src, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const built = join(root, 'dist', relative(src, file).replace(/\.ts$/, '.js'));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(file).mtimeMs) return false;
    any = true;
  }
  return any;
}

/** SIGTERM, resolved once the child has exited. */
export function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

/** The p-th percentile of an ascending list. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}
