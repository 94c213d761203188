// Event hashes and ids (server-server API, "Signing Events"): the content hash covers the whole
// event, the reference hash and the signatures cover its redacted form, and from room version 3
// on the event id is derived from the reference hash.

import * as nodeCrypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { decodeBase64Strict, encodeBase64, encodeBase64Url } from './base64.js';
import { canonicalJson } from './canonical-json.js';
import { HearthError } from './errors.js';
import { MAX_PDU_FIELD_BYTES, type Pdu } from './events.js';
import { isJsonObject, type JsonObject } from './json.js';
import { redactEvent } from './redaction.js';
import type { RoomVersion } from './room-versions.js';
import { getSignature, signBytes, verifyBytes, type SigningKey } from './signing.js';

/** A PDU before hashing and signing: `hashes` and `signatures` may be absent. */
export type PduDraft = {
  [K in keyof Pdu as K extends 'hashes' | 'signatures' ? never : K]: Pdu[K];
} & { hashes?: Pdu['hashes']; signatures?: Pdu['signatures'] };

/** Any event object; PDUs, drafts and plain JSON alike. */
type AnyEvent = { readonly [key: string]: unknown };

const SHA256_BYTES = 32;

/** Canonical JSON strictness: a version's own rule, or lenient when no version is known. */
function strictFor(version: RoomVersion | undefined): boolean {
  return version?.strictCanonicalJson ?? false;
}

/** Canonical JSON of `event` without the top-level keys in `omit` (a shallow copy, nothing deep). */
function canonicalWithout(event: object, omit: ReadonlySet<string>, strict: boolean): string {
  const target: { [key: string]: unknown } = {};
  for (const k in event) if (!omit.has(k)) target[k] = (event as AnyEvent)[k];
  return canonicalJson(target, { strict });
}

// The one-shot digest skips the Hash object; hashing runs several times per event. It came with
// Node 20.12, so it is looked up rather than imported by name.
const oneShotHash: typeof nodeCrypto.hash | undefined = nodeCrypto.hash;

function sha256(text: string): Buffer {
  return oneShotHash !== undefined ? oneShotHash('sha256', text, 'buffer') : createHash('sha256').update(text, 'utf8').digest();
}

const CONTENT_HASH_OMIT: ReadonlySet<string> = new Set(['unsigned', 'signatures', 'hashes']);

/**
 * The content hash: sha256 of the canonical JSON of the event without `unsigned`, `signatures`
 * and `hashes`. Throws HearthError M_BAD_JSON when the event has no canonical form.
 */
export function computeContentHash(pdu: object, version?: RoomVersion): Uint8Array {
  return sha256(canonicalWithout(pdu, CONTENT_HASH_OMIT, strictFor(version)));
}

/**
 * Whether `hashes.sha256` matches the event's content. False (never an exception) when it is
 * missing, not base64, or the event has no canonical form; the spec then treats the event as a
 * redacted copy.
 */
export function checkContentHash(pdu: object, version?: RoomVersion): boolean {
  const hashes = (pdu as AnyEvent).hashes;
  if (!isJsonObject(hashes) || typeof hashes.sha256 !== 'string') return false;
  const claimed = decodeBase64Strict(hashes.sha256);
  if (claimed === null || claimed.length !== SHA256_BYTES) return false;
  let actual: Uint8Array;
  try {
    actual = computeContentHash(pdu, version);
  } catch {
    return false;
  }
  return Buffer.compare(Buffer.from(claimed), actual) === 0;
}

/**
 * Canonical JSON of the redacted event without `signatures` and `unsigned`: what the reference
 * hash and the signatures cover. Throws HearthError M_BAD_JSON when the event has no canonical
 * form. Redaction already drops `unsigned` and returns a fresh object, so `signatures` is blanked
 * in place (the encoder skips undefined members) instead of copying.
 */
export function signableEventText(pdu: object, version: RoomVersion): string {
  const redacted = redactEvent(pdu, version) as { signatures?: unknown };
  redacted.signatures = undefined;
  return canonicalJson(redacted, { strict: version.strictCanonicalJson });
}

/**
 * The reference hash (spec steps): 1. redact the event per `version`; 2. remove `signatures` and
 * `unsigned`; 3. canonical JSON; 4. sha256.
 */
export function referenceHash(pdu: object, version: RoomVersion): Uint8Array {
  return sha256(signableEventText(pdu, version));
}

function isValidLegacyEventId(id: unknown): id is string {
  if (typeof id !== 'string' || !id.startsWith('$')) return false;
  const colon = id.indexOf(':');
  return colon > 1 && colon < id.length - 1 && Buffer.byteLength(id, 'utf8') <= MAX_PDU_FIELD_BYTES;
}

/**
 * The event id: in v1–v2 rooms the `event_id` the origin chose (`$opaque:domain`), from v3 on
 * `$` + the reference hash in unpadded base64 (standard in v3, URL-safe from v4).
 */
export function computeEventId(pdu: object, version: RoomVersion): string {
  switch (version.eventIdFormat) {
    case 'v1': {
      const id = (pdu as AnyEvent).event_id;
      if (!isValidLegacyEventId(id)) throw HearthError.badJson('Event has no valid event_id ($opaque:domain)');
      return id;
    }
    case 'v3':
      return '$' + encodeBase64(referenceHash(pdu, version));
    case 'v4':
      return '$' + encodeBase64Url(referenceHash(pdu, version));
  }
}

/**
 * `computeEventId` for an event whose `signableEventText` is known already: from v3 it is the
 * hash of that text, so the event need not be redacted and encoded again.
 */
export function eventIdFromSignable(pdu: object, signable: string, version: RoomVersion): string {
  switch (version.eventIdFormat) {
    case 'v1':
      return computeEventId(pdu, version);
    case 'v3':
      return '$' + encodeBase64(sha256(signable));
    case 'v4':
      return '$' + encodeBase64Url(sha256(signable));
  }
}

/**
 * Hashes and signs an outgoing event (spec, "Adding hashes and signatures to outgoing events"):
 * the content hash goes into `hashes.sha256`, the redacted event is signed, and the signature is
 * added to the full event's `signatures` beside any already there. The input is not changed.
 */
export function hashAndSignEvent(
  pdu: PduDraft,
  serverName: string,
  key: SigningKey,
  version: RoomVersion,
): Pdu {
  return hashAndSign(pdu, serverName, key, version).pdu;
}

/** A signed event with what identifies it. */
export interface SignedEvent {
  readonly pdu: Pdu;
  /** `computeEventId(pdu, version)`. */
  readonly eventId: string;
  /** `referenceHash(pdu, version)`. */
  readonly referenceHash: Uint8Array;
}

/**
 * `hashAndSignEvent`, also giving the event's reference hash and id. The signature covers the
 * same text the reference hash does (the redacted event without `signatures` and `unsigned`), so
 * both come from one redaction and one encoding.
 */
export function hashAndSignEventWithId(
  pdu: PduDraft,
  serverName: string,
  key: SigningKey,
  version: RoomVersion,
): SignedEvent {
  const { pdu: signed, signable } = hashAndSign(pdu, serverName, key, version);
  let eventId: string;
  let reference: Buffer | undefined;
  if (version.eventIdFormat === 'v1') {
    eventId = computeEventId(signed, version);
  } else {
    reference = sha256(signable);
    eventId = '$' + (version.eventIdFormat === 'v3' ? encodeBase64(reference) : encodeBase64Url(reference));
  }
  return { pdu: signed, eventId, referenceHash: reference ?? sha256(signable) };
}

function hashAndSign(pdu: PduDraft, serverName: string, key: SigningKey, version: RoomVersion): { pdu: Pdu; signable: string } {
  const event = pdu as AnyEvent;
  const strict = version.strictCanonicalJson;
  const contentHash = encodeBase64(sha256(canonicalWithout(event, CONTENT_HASH_OMIT, strict)));
  const hashed: { [key: string]: unknown } = { ...event, hashes: { sha256: contentHash } };
  const signable = signableEventText(hashed, version);
  const signature = signBytes(Buffer.from(signable, 'utf8'), key);
  const existing = isJsonObject(event.signatures) ? event.signatures : {};
  const mine = isJsonObject(existing[serverName]) ? existing[serverName] : {};
  hashed.signatures = { ...existing, [serverName]: { ...mine, [key.keyId]: signature } };
  return { pdu: hashed as Pdu, signable };
}

/**
 * Whether `signatures[serverName][keyId]` on `pdu` is a valid signature by `publicKey` over the
 * event's redacted form, so that it holds for full and redacted copies alike. Never throws.
 */
export function verifyEventSignature(
  pdu: object,
  serverName: string,
  keyId: string,
  publicKey: Uint8Array | string,
  version: RoomVersion,
): boolean {
  const signature = getSignature(pdu as JsonObject, serverName, keyId);
  if (signature === undefined) return false;
  let text: string;
  try {
    text = signableEventText(pdu, version);
  } catch {
    return false;
  }
  return verifyBytes(Buffer.from(text, 'utf8'), signature, publicKey);
}
