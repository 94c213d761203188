// Checking what clients send for cross-signing: the shape of a cross-signing key, and signatures
// over device keys and master keys, each verified (Ed25519 over canonical JSON) against the key it
// claims to be made with and checked to be over the key the server holds.

import { decodeBase64Strict } from '../protocol/base64.js';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import { verifyJsonSignature } from '../protocol/signing.js';
import type { CrossSigningKeyType, StoredCrossSigningKey, StoredSignature } from '../storage/user-data/cross-signing.js';
import { isSignatureMap, sameJson } from './device-keys.js';

const ED25519_PUBLIC_KEY_BYTES = 32;

/** A signed key that could not be accepted: reported under `failures`, the rest go on. */
export class SignatureFailure extends Error {
  constructor(
    readonly status: number,
    readonly errcode: string,
    message: string,
  ) {
    super(message);
  }

  toJson(): JsonObject {
    return { status: this.status, errcode: this.errcode, error: this.message };
  }
}

const invalidSignature = (message: string) => new SignatureFailure(400, 'M_INVALID_SIGNATURE', message);

/**
 * A cross-signing key as the spec shapes it: the requester's, with `usage` naming its type and
 * exactly one Ed25519 key `ed25519:<public key>` whose value is that public key.
 */
export function parseCrossSigningKey(value: JsonValue, field: string, type: CrossSigningKeyType, userId: string): StoredCrossSigningKey {
  const key = value as JsonObject;
  const owner = requiredField(key, 'user_id', field);
  const usage = requiredField(key, 'usage', field);
  const keys = requiredField(key, 'keys', field);
  if (typeof owner !== 'string') throw HearthError.badJson(`${field}.user_id must be a string`);
  if (!Array.isArray(usage) || !usage.every((u) => typeof u === 'string')) throw HearthError.badJson(`${field}.usage must be a list of strings`);
  if (!isJsonObject(keys) || !Object.values(keys).every((k) => typeof k === 'string')) {
    throw HearthError.badJson(`${field}.keys must map a key ID to a public key`);
  }
  const signatures = key['signatures'];
  if (signatures !== undefined && !isSignatureMap(signatures)) throw HearthError.badJson(`${field}.signatures must map user IDs to key IDs to signatures`);
  if (owner !== userId) throw HearthError.invalidParam(`Invalid ${type} key: user_id is not the requester`);
  if (!usage.includes(type)) throw HearthError.invalidParam(`Invalid ${type} key: usage does not include ${type}`);
  const entries = Object.entries(keys);
  if (entries.length !== 1) throw HearthError.invalidParam(`Invalid ${type} key: it must hold exactly one key`);
  const [keyId, publicKey] = entries[0] as [string, string];
  const bytes = decodeBase64Strict(publicKey);
  if (keyId !== `ed25519:${publicKey}` || bytes === null || bytes.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw HearthError.invalidParam(`Invalid ${type} key: expected one Ed25519 key, ed25519:<public key> mapped to the public key`);
  }
  return { publicKey, key };
}

/** The new signatures on the user's master key made by the user's devices (or the master key itself). */
export function masterKeySignatures(
  userId: string,
  signed: JsonObject,
  master: StoredCrossSigningKey,
  devices: ReadonlyMap<string, JsonObject>,
): StoredSignature[] {
  const sigs = signaturesBy(signed, userId);
  assertSameKey(signed, master.key);
  const uploaded = isJsonObject(master.key['signatures']) ? master.key['signatures'][userId] : undefined;
  const out: StoredSignature[] = [];
  for (const [signingKeyId, signature] of Object.entries(sigs)) {
    if (isJsonObject(uploaded) && uploaded[signingKeyId] === signature) continue; // came with the key
    const publicKey = signingKeyId === `ed25519:${master.publicKey}` ? master.publicKey : devicePublicKey(devices, signingKeyId);
    if (publicKey === undefined) throw invalidSignature(`${signingKeyId} is no key of a device of ${userId}`);
    if (!verifyJsonSignature(signed, userId, signingKeyId, publicKey, { strict: false })) throw invalidSignature(`Invalid signature by ${signingKeyId}`);
    out.push({ signerUserId: userId, signingKeyId, targetUserId: userId, targetKeyId: master.publicKey, signature: signature as string });
  }
  return out;
}

/** The signature of one of the user's devices by the user's self-signing key. */
export function deviceSignature(
  userId: string,
  deviceId: string,
  signed: JsonObject,
  device: JsonObject | undefined,
  ssk: StoredCrossSigningKey | undefined,
): StoredSignature[] {
  if (device === undefined) throw new SignatureFailure(404, 'M_NOT_FOUND', 'Unknown device');
  if (ssk === undefined) throw new SignatureFailure(404, 'M_NOT_FOUND', `No self_signing key found for ${userId}`);
  return [signatureBy(userId, ssk, userId, { publicKey: deviceId, key: device }, signed)];
}

/** The signature by `signer`'s key `signingKey` on `target`'s key, verified. */
export function signatureBy(
  signer: string,
  signingKey: StoredCrossSigningKey,
  targetUserId: string,
  target: { publicKey: string; key: JsonObject },
  signed: JsonObject,
): StoredSignature {
  const sigs = signaturesBy(signed, signer);
  assertSameKey(signed, target.key);
  const signingKeyId = `ed25519:${signingKey.publicKey}`;
  const signature = sigs[signingKeyId];
  if (typeof signature !== 'string') throw invalidSignature(`No signature by ${signingKeyId}`);
  if (!verifyJsonSignature(signed, signer, signingKeyId, signingKey.publicKey, { strict: false })) throw invalidSignature('Invalid signature');
  return { signerUserId: signer, signingKeyId, targetUserId, targetKeyId: target.publicKey, signature };
}

/** `signatures[user]` of a signed object; a failure when the user signed nothing. */
function signaturesBy(signed: JsonObject, userId: string): JsonObject {
  const all = signed['signatures'];
  const mine = isJsonObject(all) ? all[userId] : undefined;
  if (!isJsonObject(mine) || Object.keys(mine).length === 0) throw invalidSignature(`No signature by ${userId}`);
  for (const v of Object.values(mine)) if (typeof v !== 'string') throw invalidSignature('Signatures must be strings');
  return mine;
}

/** The signed object must be the stored key, apart from its signatures and unsigned data. */
function assertSameKey(signed: JsonObject, stored: JsonObject): void {
  if (!sameJson(withoutSignatures(signed), withoutSignatures(stored))) {
    throw new SignatureFailure(400, 'M_INVALID_PARAM', 'The signed key does not match the stored key');
  }
}

function devicePublicKey(devices: ReadonlyMap<string, JsonObject>, signingKeyId: string): string | undefined {
  if (!signingKeyId.startsWith('ed25519:')) return undefined;
  const device = devices.get(signingKeyId.slice('ed25519:'.length));
  const keys = device?.['keys'];
  const key = isJsonObject(keys) ? keys[signingKeyId] : undefined;
  return typeof key === 'string' ? key : undefined;
}

function withoutSignatures(obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (k !== 'signatures' && k !== 'unsigned') out[k] = v;
  return out;
}

function requiredField(obj: JsonObject, key: string, field: string): JsonValue {
  const v = obj[key];
  if (v === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing parameter: ${field}.${key}`);
  return v;
}
