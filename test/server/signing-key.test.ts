import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSigningKeyFile } from '../../src/protocol/signing.js';
import { loadOrCreateSigningKey } from '../../src/server/signing-key.js';

test('the signing key is made once, private, and read back on later starts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-key-'));
  try {
    const path = join(dir, 'nested', 'signing.key');
    const made = loadOrCreateSigningKey(path);
    assert.equal(made.created, true);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(parseSigningKeyFile(readFileSync(path, 'utf8'))[0]!.keyId, made.key.keyId);
    const read = loadOrCreateSigningKey(path);
    assert.equal(read.created, false);
    assert.equal(read.key.keyId, made.key.keyId);
    assert.deepEqual(Buffer.from(read.key.publicKey), Buffer.from(made.key.publicKey));

    writeFileSync(path, 'ed25519 a_bad not-base64!\n');
    assert.throws(() => loadOrCreateSigningKey(path), /cannot read the signing key .*signing\.key: Signing key file line 1/);
    writeFileSync(path, '# nothing here\n');
    assert.throws(() => loadOrCreateSigningKey(path), /holds no key/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
