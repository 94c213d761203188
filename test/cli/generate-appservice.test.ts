import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAppServices, loadRegistrations } from '../../src/appservice/load.js';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

function hearth(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', input: '' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const FLAGS = [
  '--id', 'irc',
  '--url', 'http://127.0.0.1:9999',
  '--sender-localpart', 'ircbot',
  '--user-regex', '@irc_.*:example\\.org',
  '--alias-regex', '#irc_.*:example\\.org',
];

test('generate-appservice writes a registration once, readable only by its owner, that loads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
  try {
    const file = join(dir, 'appservices', 'irc.yaml');
    let r = hearth('generate-appservice', ...FLAGS, '--out', file);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(statSync(file).mode & 0o777, 0o600);

    const [reg] = loadRegistrations([file], 'example.org');
    assert.equal(reg!.id, 'irc');
    assert.equal(reg!.url, 'http://127.0.0.1:9999');
    assert.equal(reg!.sender_localpart, 'ircbot');
    assert.equal(reg!.rate_limited, false);
    for (const token of [reg!.as_token, reg!.hs_token]) assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(reg!.as_token, reg!.hs_token);
    assert.deepEqual(
      reg!.namespaces.users.map((ns) => [ns.exclusive, ns.regex]),
      [[true, '@irc_.*:example\\.org']],
    );
    assert.deepEqual(
      reg!.namespaces.aliases.map((ns) => [ns.exclusive, ns.regex]),
      [[true, '#irc_.*:example\\.org']],
    );
    assert.deepEqual(reg!.namespaces.rooms, []);
    const services = loadAppServices([file], 'example.org');
    assert.equal(services.byAsToken(reg!.as_token)?.id, 'irc');
    assert.equal(services.exclusiveOwnerOfUser('@irc_alice:example.org')?.id, 'irc');

    // Never overwritten.
    const before = readFileSync(file, 'utf8');
    r = hearth('generate-appservice', ...FLAGS, '--out', file);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /already exists/);
    assert.equal(readFileSync(file, 'utf8'), before);

    // Printed without --out; fresh tokens each time, and no alias namespace unless asked for.
    r = hearth('generate-appservice', ...FLAGS.slice(0, 8).map((f) => f.replace('irc', 'web')));
    assert.equal(r.code, 0, r.stderr);
    const printed = join(dir, 'printed.yaml');
    writeFileSync(printed, r.stdout);
    const [first, second] = loadRegistrations([file, printed], 'example.org');
    assert.equal(second!.id, 'web');
    assert.deepEqual(second!.namespaces.aliases, []);
    assert.notEqual(second!.as_token, first!.as_token);
    assert.notEqual(second!.hs_token, first!.hs_token);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('generate-appservice refuses what would not load, naming the flag', () => {
  let r = hearth('generate-appservice', '--id', 'irc');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /missing --url/);
  r = hearth('generate-appservice', ...FLAGS.slice(0, 6), '--user-regex', '@irc_(.*', '--url', 'ftp://host');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--user-regex: invalid regular expression "@irc_\(\.\*": Unterminated group/);
  assert.match(r.stderr, /--url: must be an http or https URL/);
  assert.equal(r.stdout, '');
  r = hearth('generate-appservice', ...FLAGS.slice(0, 4), '--sender-localpart', 'a:b', '--user-regex', '@x.*');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sender-localpart: must not contain ":"/);
});
