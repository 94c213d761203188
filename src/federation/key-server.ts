// GET /_chat/key/v2/server: this server's published signing keys (server-server API, "Publishing
// Keys"). The answer is signed with the key it publishes, so a reader can check it came from us,
// and says how long it may be cached (now + global.key_validity_period).

import type { RouteDef } from '../http/route.js';
import { encodeBase64 } from '../protocol/base64.js';
import type { JsonObject } from '../protocol/json.js';
import { type SigningKey, signJson } from '../protocol/signing.js';

export interface KeyServerSettings {
  readonly serverName: string;
  readonly signingKey: SigningKey;
  /** How long readers may cache the answer, in milliseconds. */
  readonly validityPeriodMs: number;
  readonly now?: () => number;
}

/** The signed key document as of `now`. */
export function serverKeysDocument(settings: KeyServerSettings, now: number): JsonObject {
  const { serverName, signingKey } = settings;
  const doc: JsonObject = {
    server_name: serverName,
    verify_keys: { [signingKey.keyId]: { key: encodeBase64(signingKey.publicKey) } },
    old_verify_keys: {},
    valid_until_ts: Math.floor(now + settings.validityPeriodMs),
  };
  return signJson(doc, serverName, signingKey);
}

export function keyServerRoutes(settings: KeyServerSettings): RouteDef[] {
  const now = settings.now ?? Date.now;
  const handler = () => ({ body: serverKeysDocument(settings, now()) });
  return [
    { method: 'GET', api: 'key', versions: ['v2'], path: '/server', auth: 'none', handler },
    // The key-id form is deprecated; like the reference server, it answers with every key.
    { method: 'GET', api: 'key', versions: ['v2'], path: '/server/:keyId', auth: 'none', handler },
  ];
}
