// Helpers shared by the benchmarks that run the server as a child process.

import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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

/**
 * The server's entry script: dist/cli.js (what `npm start` runs), built first when older than the
 * sources. Under tsx the server would hold some 50 MB more (the loader's thread and source
 * maps), so tsx is only the fallback when the build cannot be made.
 */
export function serverScript(entry?: string): { script: string; how: string } {
  if (entry !== undefined) return { script: entry, how: relative(root, entry) };
  const dist = join(root, 'dist/cli.js');
  if (distIsFresh()) return { script: dist, how: 'dist/cli.js' };
  console.log('dist/ is older than src/: building it (npm run build) ...');
  const build = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (distIsFresh()) {
    const errors = (build.stdout.match(/error TS\d+/g) ?? []).length;
    return { script: dist, how: `dist/cli.js, built now${errors > 0 ? ` (the compiler reported ${errors} type errors)` : ''}` };
  }
  console.log(`  the build failed (${build.stderr || build.stdout}); running src/cli.ts through tsx instead`);
  return { script: join(root, 'src/cli.ts'), how: 'src/cli.ts via tsx (peak RSS about 50 MB higher than built)' };
}

/** The node options `npm start` gives the server (`exec node --flag ... dist/cli.js serve`). */
export function startScriptNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const words = (pkg.scripts?.['start'] ?? '').split(/\s+/);
  const flags: string[] = [];
  for (let i = words.indexOf('node') + 1; i > 0 && i < words.length && words[i]!.startsWith('-'); i++) flags.push(words[i]!);
  return flags;
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
