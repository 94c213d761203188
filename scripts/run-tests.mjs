// Runs every test file under test/ with node's built-in runner (TypeScript through tsx).
// Node 20's runner does not expand globs itself, so the files are listed here.
// Usage: node scripts/run-tests.mjs [filter ...]   (filters match parts of file paths;
// HEARTH_TEST_SKIP=part,part leaves files out)
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...collect(path));
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

// HEARTH_TEST_SKIP: comma-separated parts of file paths to leave out (CI's Node 24 pass).
const skips = (process.env.HEARTH_TEST_SKIP ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
const files = collect(join(root, 'test')).filter(
  (f) => (filters.length === 0 || filters.some((p) => f.includes(p))) && !skips.some((s) => f.includes(s)),
);
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Two files at a time: node's default (one fewer than the cores) runs them one by one on a
// two-core machine. HEARTH_TEST_CONCURRENCY overrides it.
const concurrency = Number(process.env.HEARTH_TEST_CONCURRENCY ?? 2);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
