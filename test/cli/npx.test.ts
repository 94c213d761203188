// The README's `npx hearth …` works inside the checkout: npm runs the package's own bin there. From
// another folder, `npm exec --prefix <checkout> -- hearth …` does. (Elsewhere, plain `npx hearth`
// would look for an unrelated npm package of that name, which the docs warn about.) The checkout is
// stood in for by a folder with the package's name, bin and build, as in npm-start.test.ts.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function distIsCurrent(): boolean {
  for (const src of sourceFiles(join(ROOT, 'src'))) {
    const out = join(ROOT, 'dist', relative(join(ROOT, 'src'), src).replace(/\.ts$/, '.js'));
    if (!existsSync(out) || statSync(out).mtimeMs < statSync(src).mtimeMs) return false;
  }
  return true;
}

let project: string;
let elsewhere: string;
before(() => {
  project = mkdtempSync(join(tmpdir(), 'hearth-npx-'));
  elsewhere = mkdtempSync(join(tmpdir(), 'hearth-elsewhere-'));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module', bin: pkg.bin }),
  );
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
  if (distIsCurrent()) {
    symlinkSync(join(ROOT, 'dist'), join(project, 'dist'));
  } else {
    mkdirSync(join(project, 'dist'));
    const cli = join(project, 'dist', 'cli.js');
    writeFileSync(
      cli,
      `#!/usr/bin/env node\nimport { register } from 'tsx/esm/api';\nregister();\nawait import(${JSON.stringify(join(ROOT, 'src', 'cli.ts'))});\n`,
    );
    chmodSync(cli, 0o755);
  }
  mkdirSync(join(project, 'docs'));
});
after(() => {
  rmSync(project, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

function run(command: string, args: string[], cwd: string) {
  // No terminal and no "yes": were npm to look for a package elsewhere, it would stop, not install.
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 120_000, input: '', env: { ...process.env, npm_config_yes: 'false' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('npx hearth runs the checkout’s own command inside the checkout and in folders below it', () => {
  for (const cwd of [project, join(project, 'docs')]) {
    const r = run('npx', ['hearth', '--version'], cwd);
    assert.equal(r.code, 0, `${cwd}: ${r.stderr}`);
    assert.equal(r.stdout, `${pkg.version}\n`);
  }
});

test('npm exec --prefix <checkout> -- hearth runs it from any folder', () => {
  const r = run('npm', ['exec', '--prefix', project, '--', 'hearth', 'generate-config', '--server-name', 'npx.test'], elsewhere);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^ {2}server_name: npx\.test$/m);
});
