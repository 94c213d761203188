// Signing JSON (spec appendices, "Signing JSON"): the canonical JSON of an object without its
// `signatures` and `unsigned` members is signed with Ed25519, and the unpadded base64 signature is
// stored at `signatures[entity][keyId]`.

import sodium from 'sodium-native';
import { decodeBase64Strict, encodeBase64 } from './base64.js';
import { canonicalJson } from './canonical-json.js';
import { HearthError } from './errors.js';
import { isJsonObject, type JsonObject } from './json.js';

/** `ed25519:<version>`: the only signing algorithm servers use. */
export type KeyIdString = `ed25519:${string}`;

export interface SigningKey {
  keyId: KeyIdString;
  /** The 32-byte seed: what signing-key files store. */
  seed: Uint8Array;
  /** The 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
  /** The 64-byte secret key in libsodium's layout (seed followed by public key). */
  secretKey: Uint8Array;
}

export interface SigningOptions {
  /** Whether numbers must be strict canonical JSON (see CanonicalJsonOptions). Default true. */
  strict?: boolean;
}

const SEED_BYTES = 32;
const PUBLIC_KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;
// The key-identifier part of a key id: the key-server schema allows [a-zA-Z0-9_].
const KEY_VERSION = /^[A-Za-z0-9_]+$/;
const VERSION_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function buf(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkVersion(version: string): void {
  if (!KEY_VERSION.test(version)) {
    throw HearthError.invalidParam(`Invalid signing key version "${version}": use [A-Za-z0-9_]`);
  }
}

/** The signing key derived from a 32-byte seed, under `keyId` (`ed25519:<version>`). */
export function signingKeyFromSeed(keyId: string, seed: Uint8Array): SigningKey {
  if (!keyId.startsWith('ed25519:')) {
    throw HearthError.invalidParam(`Unsupported signing key id "${keyId}": only ed25519 keys exist`);
  }
  checkVersion(keyId.slice('ed25519:'.length));
  if (seed.length !== SEED_BYTES) {
    throw HearthError.invalidParam(`An Ed25519 seed is ${SEED_BYTES} bytes, not ${seed.length}`);
  }
  const publicKey = Buffer.alloc(PUBLIC_KEY_BYTES);
  const secretKey = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  sodium.crypto_sign_seed_keypair(publicKey, secretKey, buf(seed));
  return { keyId: keyId as KeyIdString, seed: Buffer.from(seed), publicKey, secretKey };
}

/** A fresh random key; `version` defaults to `a_` and four random letters or digits. */
export function generateSigningKey(version?: string): SigningKey {
  let v = version;
  if (v === undefined) {
    v = 'a_';
    for (let i = 0; i < 4; i++) v += VERSION_CHARS[sodium.randombytes_uniform(VERSION_CHARS.length)];
  }
  checkVersion(v);
  const seed = Buffer.alloc(SEED_BYTES);
  sodium.randombytes_buf(seed);
  return signingKeyFromSeed(`ed25519:${v}`, seed);
}

/** One line per key: `ed25519 <version> <unpadded base64 seed>` (the common signing-key file format). */
export function encodeSigningKeyFile(keys: SigningKey | readonly SigningKey[]): string {
  const list: readonly SigningKey[] = Array.isArray(keys) ? keys : [keys as SigningKey];
  return list
    .map((k) => `ed25519 ${k.keyId.slice('ed25519:'.length)} ${encodeBase64(k.seed)}\n`)
    .join('');
}

/** Parses a signing-key file. Blank lines and `#` comments are skipped; anything else malformed throws. */
export function parseSigningKeyFile(text: string): SigningKey[] {
  const keys: SigningKey[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const parts = line.split(/\s+/);
    if (parts.length !== 3) {
      throw HearthError.invalidParam(`Signing key file line ${i + 1}: expected "ed25519 <version> <seed>"`);
    }
    const [alg, version, seedText] = parts as [string, string, string];
    if (alg !== 'ed25519') {
      throw HearthError.invalidParam(`Signing key file line ${i + 1}: unsupported algorithm "${alg}"`);
    }
    if (!KEY_VERSION.test(version)) {
      throw HearthError.invalidParam(`Signing key file line ${i + 1}: invalid key version "${version}"`);
    }
    const seed = decodeBase64Strict(seedText);
    if (seed === null || seed.length !== SEED_BYTES) {
      throw HearthError.invalidParam(`Signing key file line ${i + 1}: the seed is not ${SEED_BYTES} bytes of base64`);
    }
    keys.push(signingKeyFromSeed(`ed25519:${version}`, seed));
  }
  return keys;
}

/** The canonical JSON bytes that a signature over `obj` covers: all but `signatures` and `unsigned`. */
export function signableBytes(obj: JsonObject, options: SigningOptions = {}): Buffer {
  let target: JsonObject = obj;
  if ('signatures' in obj || 'unsigned' in obj) {
    // A shallow copy: nested values are shared, only the two top-level members are left out.
    target = {};
    for (const k in obj) if (k !== 'signatures' && k !== 'unsigned') target[k] = obj[k]!;
  }
  return Buffer.from(canonicalJson(target, { strict: options.strict ?? true }), 'utf8');
}

/** The Ed25519 signature of `message` by `key`, as unpadded base64. */
export function signBytes(message: Uint8Array, key: SigningKey): string {
  const signature = Buffer.allocUnsafe(SIGNATURE_BYTES);
  sodium.crypto_sign_detached(signature, buf(message), buf(key.secretKey));
  return encodeBase64(signature);
}

/** The signature `signJson` would add, without adding it (e.g. for request authorization headers). */
export function signJsonDetached(obj: JsonObject, key: SigningKey, options: SigningOptions = {}): string {
  return signBytes(signableBytes(obj, options), key);
}

/**
 * A copy of `obj` with `signatures[serverName][key.keyId]` set; signatures already present (from
 * other servers or other keys) are kept. `obj` itself is not changed.
 */
export function signJson<T extends JsonObject>(
  obj: T,
  serverName: string,
  key: SigningKey,
  options: SigningOptions = {},
): T {
  const signature = signJsonDetached(obj, key, options);
  const existing = isJsonObject(obj.signatures) ? obj.signatures : {};
  const mine = isJsonObject(existing[serverName]) ? existing[serverName] : {};
  return {
    ...obj,
    signatures: { ...existing, [serverName]: { ...mine, [key.keyId]: signature } },
  };
}

/** Verifies an Ed25519 `signature` over `message`; false for keys or signatures of the wrong shape. */
export function verifyBytes(
  message: Uint8Array,
  signatureB64: string,
  publicKey: Uint8Array | string,
): boolean {
  if (typeof signatureB64 !== 'string') return false;
  const signature = decodeBase64Strict(signatureB64);
  if (signature === null || signature.length !== SIGNATURE_BYTES) return false;
  const key = typeof publicKey === 'string' ? decodeBase64Strict(publicKey) : publicKey;
  if (key === null || key.length !== PUBLIC_KEY_BYTES) return false;
  return sodium.crypto_sign_verify_detached(buf(signature), buf(message), buf(key));
}

/**
 * Whether `signatureB64` is a valid signature by `publicKey` (bytes, or unpadded base64) over the
 * canonical JSON of `obj` without `signatures` and `unsigned`. Never throws: malformed objects,
 * signatures or keys give false.
 */
export function verifySignatureWithPublicKey(
  obj: JsonObject,
  signatureB64: string,
  publicKey: Uint8Array | string,
  options: SigningOptions = {},
): boolean {
  let message: Buffer;
  try {
    message = signableBytes(obj, options);
  } catch {
    return false;
  }
  return verifyBytes(message, signatureB64, publicKey);
}

/** The signature at `signatures[serverName][keyId]`, if it is a string. */
export function getSignature(obj: JsonObject, serverName: string, keyId: string): string | undefined {
  const signatures = obj.signatures;
  if (!isJsonObject(signatures) || !Object.hasOwn(signatures, serverName)) return undefined;
  const forServer = signatures[serverName];
  if (!isJsonObject(forServer) || !Object.hasOwn(forServer, keyId)) return undefined;
  const sig = forServer[keyId];
  return typeof sig === 'string' ? sig : undefined;
}

/** Verifies `signatures[serverName][keyId]` on `obj`; false when it is missing. */
export function verifyJsonSignature(
  obj: JsonObject,
  serverName: string,
  keyId: string,
  publicKey: Uint8Array | string,
  options: SigningOptions = {},
): boolean {
  const sig = getSignature(obj, serverName, keyId);
  return sig !== undefined && verifySignatureWithPublicKey(obj, sig, publicKey, options);
}

/**
 * The string signatures on `obj` by server, then key id. Malformed entries are left out; key ids
 * of algorithms other than ed25519 are kept (the caller decides what it understands).
 */
export function signedServers(obj: JsonObject): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  const signatures = obj.signatures;
  if (!isJsonObject(signatures)) return out;
  for (const server of Object.keys(signatures)) {
    const forServer = signatures[server];
    if (!isJsonObject(forServer)) continue;
    const keys = new Map<string, string>();
    for (const keyId of Object.keys(forServer)) {
      const sig = forServer[keyId];
      if (typeof sig === 'string') keys.set(keyId, sig);
    }
    if (keys.size > 0) out.set(server, keys);
  }
  return out;
}
