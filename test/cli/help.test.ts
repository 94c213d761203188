import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

function hearth(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('help, --help and -h print the usage on standard output and exit 0', () => {
  const help = hearth('help');
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: hearth <command>/);
  for (const flag of ['--help', '-h']) {
    const r = hearth(flag);
    assert.equal(r.code, 0, `${flag}: ${r.stderr}`);
    assert.equal(r.stdout, help.stdout, flag);
    assert.equal(r.stderr, '', flag);
  }
});

test('an unknown flag is still bad usage', () => {
  const r = hearth('--helpme');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Unknown command "--helpme"/);
});
