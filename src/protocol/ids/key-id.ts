// Signing key IDs `algorithm:version`, e.g. `ed25519:a_AbC1` (appendix "Signing Details";
// server-server key definitions: the version matches `[a-zA-Z0-9_]`). The spec gives no grammar
// for the algorithm; known ones (`ed25519`, `curve25519`, `signed_curve25519`) fit the same set.

import { type Branded, type ParseOptions, checked } from './common.js';

export type KeyId = Branded<'KeyId'>;

export interface KeyIdParts {
  readonly algorithm: string;
  readonly version: string;
  readonly keyId: KeyId;
}

const PART = /^[A-Za-z0-9_]+$/;

function keyIdProblem(s: string): string | undefined {
  const colon = s.indexOf(':');
  if (colon === -1) return "has no ':' between the algorithm and the version";
  const algorithm = s.slice(0, colon);
  const version = s.slice(colon + 1);
  if (algorithm.length === 0) return 'algorithm is empty';
  if (!PART.test(algorithm)) return 'algorithm may hold only A-Z, a-z, 0-9 and "_"';
  if (version.length === 0) return 'version is empty';
  if (!PART.test(version)) return 'version may hold only A-Z, a-z, 0-9 and "_"';
  return undefined;
}

function partsOf(keyId: KeyId): KeyIdParts {
  const colon = keyId.indexOf(':');
  return { algorithm: keyId.slice(0, colon), version: keyId.slice(colon + 1), keyId };
}

export function parseKeyId(input: unknown, opts?: ParseOptions): KeyIdParts {
  return partsOf(checked('key ID', input, keyIdProblem, opts) as KeyId);
}

export function isKeyId(input: unknown): input is KeyId {
  return typeof input === 'string' && keyIdProblem(input) === undefined;
}

export function tryParseKeyId(input: unknown): KeyIdParts | undefined {
  return isKeyId(input) ? partsOf(input) : undefined;
}

/** The key ID `algorithm:version`, checked. */
export function keyIdFrom(algorithm: string, version: string, opts?: ParseOptions): KeyId {
  return parseKeyId(`${algorithm}:${version}`, opts).keyId;
}
