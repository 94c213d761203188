// Typed access to vectors.json, which scripts/gen-signing-vectors.py writes with signedjson,
// canonicaljson, PyNaCl and hashlib.

import { readFileSync } from 'node:fs';
import type { JsonObject } from '../../../src/protocol/json.js';

/** [index into servers, index into keys]: who signs, in order. */
export type SigningStep = [number, number];

export interface SigningVectors {
  keys: { keyId: string; seed: string; publicKey: string }[];
  keyFile: string;
  servers: string[];
  json: { steps: SigningStep[]; signed: JsonObject }[];
  events: {
    roomVersion: string;
    steps: SigningStep[];
    signed: JsonObject;
    redactedKeys: string[];
    redactedContent: JsonObject;
    referenceHash: string;
    eventId?: string;
  }[];
}

export const vectors: SigningVectors = JSON.parse(
  readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'),
) as SigningVectors;
