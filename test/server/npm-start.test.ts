// `npm start` as a newcomer runs it: in a folder with no configuration, the package's start script
// writes hearth.yaml and a signing key, then serves. The script runs the built CLI (dist/). The test
// uses dist/ when it is up to date with src/ (as after `npm install` or `npm ci`); while sources are
// being edited it stands a loader for src/cli.ts in its place rather than building, which is slow.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseConfig } from '../../src/config/index.js';
import { parseSigningKeyFile } from '../../src/protocol/signing.js';
import { FIRST_ACCOUNT_TOKEN, LISTENING, PROCESS_WAIT_MS, spawnProcess } from './processes.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  bin: Record<string, string>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Whether every source file has a compiled file at least as new. */
function distIsCurrent(): boolean {
  for (const src of sourceFiles(join(ROOT, 'src'))) {
    const out = join(ROOT, 'dist', relative(join(ROOT, 'src'), src).replace(/\.ts$/, '.js'));
    if (!existsSync(out) || statSync(out).mtimeMs < statSync(src).mtimeMs) return false;
  }
  return true;
}

describe('npm start', () => {
  let project: string;
  before(() => {
    // A folder standing in for a fresh checkout: the package's start script, its build and its
    // dependencies, and nothing else.
    project = mkdtempSync(join(tmpdir(), 'hearth-npm-start-'));
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'hearth-start-check', private: true, type: 'module', scripts: { start: pkg.scripts['start'] } }),
    );
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
    if (distIsCurrent()) {
      symlinkSync(join(ROOT, 'dist'), join(project, 'dist'));
    } else {
      mkdirSync(join(project, 'dist'));
      writeFileSync(
        join(project, 'dist', 'cli.js'),
        `import { register } from 'tsx/esm/api';\nregister();\nawait import(${JSON.stringify(join(ROOT, 'src', 'cli.ts'))});\n`,
      );
    }
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  test('the start script runs the built CLI, which is the package bin', () => {
    // The start script and the bin's interpreter line give node the same memory options and malloc arenas.
    const flags = '--max-semi-space-size=4 --heap-growing-percent=50';
    assert.equal(pkg.scripts['start'], `MALLOC_ARENA_MAX=2 exec node ${flags} dist/cli.js serve`);
    assert.equal(readFileSync(join(ROOT, 'src', 'cli.ts'), 'utf8').split('\n', 1)[0], `#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node ${flags}`);
    assert.equal(pkg.bin['hearth'], 'dist/cli.js');
    assert.equal(pkg.scripts['prepare'], 'npm run build');
  });

  test('on a first start it writes hearth.yaml and a signing key, then serves', async () => {
    const npm = spawnProcess('npm', ['start', '--silent'], {
      cwd: project,
      group: true,
      // Only the port is moved off 8008 for the test; everything else is the generated file.
      env: { HEARTH_LISTEN__HTTP: '127.0.0.1:0' },
    });
    try {
      const [, url] = await npm.waitFor(LISTENING);
      assert.match(npm.stdout(), /wrote a default one to .*hearth\.yaml/);
      const { config } = parseConfig(readFileSync(join(project, 'hearth.yaml'), 'utf8'), { baseDir: project });
      assert.equal(config.global.server_name, 'localhost');
      assert.equal(config.global.data_dir, join(project, 'data'));
      assert.deepEqual(config.listen.http, { host: '0.0.0.0', port: 8008 });
      assert.equal(parseSigningKeyFile(readFileSync(join(project, 'data', 'signing.key'), 'utf8')).length, 1);
      await npm.waitFor(FIRST_ACCOUNT_TOKEN);
      // The register command the notice prints runs this installation's CLI from any folder.
      const line = /^ {4}(\S.* register --config .*--username NAME --admin)$/m.exec(npm.stdout())?.[1];
      assert.ok(line, npm.stdout());
      assert.ok(line.includes(join(project, 'hearth.yaml')), line);
      const elsewhere = mkdtempSync(join(tmpdir(), 'hearth-elsewhere-'));
      try {
        const run = spawnSync('/bin/sh', ['-c', line.replace('NAME', 'operator')], {
          cwd: elsewhere,
          input: 'operator password\n',
          encoding: 'utf8',
          timeout: PROCESS_WAIT_MS,
        });
        assert.equal(run.status, 0, `${line}\n${run.stdout}\n${run.stderr}`);
        assert.equal(run.stdout, 'Created admin account @operator:localhost\n');
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
      const res = await fetch(`${url}/health`);
      assert.equal(res.status, 200);
      // The server (npm's child, the shell having exec'd node) runs with two malloc arenas.
      const [serverPid] = readFileSync(`/proc/${npm.child.pid}/task/${npm.child.pid}/children`, 'utf8').trim().split(' ');
      const environ = readFileSync(`/proc/${serverPid}/environ`, 'utf8').split('\0');
      assert.ok(environ.includes('MALLOC_ARENA_MAX=2'), environ.filter((v) => v.startsWith('MALLOC')).join(' '));
      assert.match(readFileSync(`/proc/${serverPid}/cmdline`, 'utf8'), /dist\/cli\.js/);
      const versions = (await (await fetch(`${url}/_matrix/client/versions`)).json()) as { versions: string[] };
      assert.ok(versions.versions.includes('v1.11'));
      // Ctrl-C in a terminal: SIGINT to the foreground group. The server stops cleanly; npm waits
      // for it, then ends itself by the same signal.
      npm.signal('SIGINT');
      const exit = await npm.exited();
      assert.ok(exit.code === 0 || exit.signal === 'SIGINT', `${JSON.stringify(exit)}\n${npm.stderr()}`);
      assert.match(npm.stdout(), /SIGINT received: shutting down/);
      await assert.rejects(fetch(`${url}/health`));
    } finally {
      npm.kill();
    }
  });
});
