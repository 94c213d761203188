import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/index.js';
import { parseSigningKeyFile } from '../../src/protocol/signing.js';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

function hearth(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('generate-config prints a config that loads with the given name and data dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
  try {
    const r = hearth('generate-config', '--server-name', 'chat.example.org', '--data-dir', '/var/lib/hearth');
    assert.equal(r.code, 0, r.stderr);
    const { config, warnings } = parseConfig(r.stdout, { baseDir: dir });
    assert.deepEqual(warnings, []);
    assert.equal(config.global.server_name, 'chat.example.org');
    assert.equal(config.global.database.connection_string, 'file:/var/lib/hearth/hearth.db');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('generate-keys writes a private key file once, readable only by its owner', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
  try {
    const file = join(dir, 'keys', 'signing.key');
    let r = hearth('generate-keys', '--private-key', file);
    assert.equal(r.code, 0, r.stderr);
    const keys = parseSigningKeyFile(readFileSync(file, 'utf8'));
    assert.equal(keys.length, 1);
    assert.match(keys[0]!.keyId, /^ed25519:a_[A-Za-z0-9]{4}$/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const before = readFileSync(file, 'utf8');
    r = hearth('generate-keys', '--private-key', file);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /already exists/);
    assert.equal(readFileSync(file, 'utf8'), before);
    r = hearth('generate-keys');
    assert.equal(r.code, 0);
    assert.equal(parseSigningKeyFile(r.stdout).length, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad usage exits 2 with a message', () => {
  let r = hearth('nonsense');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Unknown command "nonsense"/);
  r = hearth('generate-config', '--bogus');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bogus/);
  r = hearth('generate-config', '--server-name', 'bad name!');
  assert.notEqual(r.code, 0);
  r = hearth();
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Usage: hearth/);
});
