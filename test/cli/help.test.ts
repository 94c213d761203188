import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const SUBCOMMANDS = ['serve', 'register', 'generate-config', 'generate-keys', 'generate-appservice', 'version', 'help'];

function hearth(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', input: '' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('help, --help and -h print the usage on standard output and exit 0', () => {
  const help = hearth('help');
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: hearth <command>/);
  for (const name of SUBCOMMANDS) assert.match(help.stdout, new RegExp(`^  ${name} `, 'm'), name);
  for (const flag of ['--help', '-h']) {
    const r = hearth(flag);
    assert.equal(r.code, 0, `${flag}: ${r.stderr}`);
    assert.equal(r.stdout, help.stdout, flag);
    assert.equal(r.stderr, '', flag);
  }
});

test('--version, -V and version print the package version', () => {
  for (const form of ['--version', '-V', 'version']) {
    const r = hearth(form);
    assert.equal(r.code, 0, `${form}: ${r.stderr}`);
    assert.equal(r.stdout, `${VERSION}\n`, form);
    assert.equal(r.stderr, '', form);
  }
});

test("every subcommand's --help and -h print its own usage and exit 0, as does help COMMAND", () => {
  for (const name of SUBCOMMANDS) {
    const long = hearth(name, '--help');
    assert.equal(long.code, 0, `${name} --help: ${long.stderr}`);
    assert.equal(long.stderr, '', name);
    assert.match(long.stdout, new RegExp(`^Usage: hearth ${name}\\b`), name);
    // The other spellings, for the two commands that load the server (each run costs a process).
    if (name === 'serve' || name === 'register') {
      assert.equal(hearth(name, '-h').stdout, long.stdout, `${name} -h`);
      assert.equal(hearth('help', name).stdout, long.stdout, `help ${name}`);
    }
  }
  // The options a command takes are in its usage.
  const serve = hearth('serve', '--help').stdout;
  for (const flag of ['--config', '--http-bind-address', '--https-bind-address', '--tls-cert', '--tls-key']) {
    assert.ok(serve.includes(flag), flag);
  }
  const register = hearth('register', '--help').stdout;
  for (const flag of ['--config', '--username', '--password', '--admin']) assert.ok(register.includes(flag), flag);
  assert.match(register, /standard input/);
});

test('--help after other options still answers without running the command', () => {
  // Were serve to run, it would write hearth.yaml and start listening; it answers at once instead.
  const r = hearth('serve', '--config', '/nonexistent/hearth.yaml', '--help');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: hearth serve/);
});

test('an unknown flag or command is still bad usage: exit 2 with the usage on standard error', () => {
  let r = hearth('--helpme');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Unknown command "--helpme"/);
  assert.equal(r.stdout, '');
  for (const name of ['serve', 'register', 'generate-keys']) {
    r = hearth(name, '--bogus');
    assert.equal(r.code, 2, name);
    assert.match(r.stderr, /Unknown option '--bogus'/, name);
    assert.match(r.stderr, new RegExp(`^Usage: hearth ${name}\\b`, 'm'), name);
    assert.equal(r.stdout, '', name);
  }
  r = hearth('help', 'nonsense');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Unknown command "nonsense"/);
});
