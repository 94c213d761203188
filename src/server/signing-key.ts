// The server's Ed25519 signing key (global.private_key): read from its file, or made and written
// there on the first start.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type SigningKey,
  encodeSigningKeyFile,
  generateSigningKey,
  parseSigningKeyFile,
} from '../protocol/signing.js';

export interface LoadedSigningKey {
  /** The key that signs; the file's first one. */
  readonly key: SigningKey;
  /** Whether the file was just created. */
  readonly created: boolean;
}

export function loadOrCreateSigningKey(path: string): LoadedSigningKey {
  if (!existsSync(path)) {
    const key = generateSigningKey();
    mkdirSync(dirname(path), { recursive: true });
    // 'wx': never overwrite a key another process wrote in the meantime.
    writeFileSync(path, encodeSigningKeyFile(key), { mode: 0o600, flag: 'wx' });
    return { key, created: true };
  }
  let keys: SigningKey[];
  try {
    keys = parseSigningKeyFile(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the signing key ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (keys.length === 0) throw new Error(`the signing key file ${path} holds no key`);
  return { key: keys[0]!, created: false };
}
