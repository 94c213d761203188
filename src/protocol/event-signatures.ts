// Which servers must have signed a received event, and checking that they did (server-server API,
// "Validating hashes and signatures on received events"; v8+ auth rule 4.2). Key lookup is the
// caller's: this module only decides and verifies.

import { signableEventText } from './hashes.js';
import { isJsonObject } from './json.js';
import type { Pdu } from './events.js';
import type { RoomVersion } from './room-versions.js';
import { verifyBytes } from './signing.js';

/** A server's published verify key, as the key store knows it. */
export interface ServerVerifyKey {
  readonly publicKey: Uint8Array | string;
  /** Until when the key may sign (key server's valid_until_ts, or an old key's expired_ts). */
  readonly validUntilTs: number;
}

export type VerifyKeyLookup = (serverName: string, keyId: string) => ServerVerifyKey | undefined;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

function domainOf(id: unknown): string | undefined {
  if (typeof id !== 'string') return undefined;
  const colon = id.indexOf(':');
  return colon < 0 ? undefined : id.slice(colon + 1);
}

/** The servers whose signatures `pdu` must carry. */
export function requiredSigningServers(pdu: Pdu, version: RoomVersion): Set<string> {
  const servers = new Set<string>();
  const content = isJsonObject(pdu.content) ? pdu.content : {};
  // A third-party invite may be sent by a server other than the sender's; the auth rules check
  // its `signed` object instead.
  const thirdPartyInvite =
    pdu.type === 'm.room.member' && content.membership === 'invite' && 'third_party_invite' in content;
  if (!thirdPartyInvite) {
    const sender = domainOf(pdu.sender);
    if (sender !== undefined) servers.add(sender);
  }
  // v1–v2: the server that minted the event id too.
  if (version.eventIdFormat === 'v1') {
    const minted = domainOf(pdu.event_id);
    if (minted !== undefined) servers.add(minted);
  }
  // v8+ rule 4.2: a join authorised via a user must be signed by that user's server.
  if (version.restrictedJoinRule && pdu.type === 'm.room.member' && content.membership === 'join') {
    const authoriser = domainOf(content.join_authorised_via_users_server);
    if (authoriser !== undefined) servers.add(authoriser);
  }
  return servers;
}

/**
 * Whether every required server has a valid signature on `pdu` (over its redacted form) from a
 * key the lookup knows. Unknown keys are skipped; from v5 a key that expired before the event's
 * origin_server_ts is skipped too. `signable` is the event's `signableEventText` when the caller
 * has it already; otherwise it is worked out once, on the first key to check.
 */
export function checkEventSignatures(
  pdu: Pdu,
  version: RoomVersion,
  lookup: VerifyKeyLookup,
  signable?: string,
): SignatureCheck {
  const signatures = isJsonObject(pdu.signatures) ? pdu.signatures : {};
  let message: Buffer | null | undefined = signable === undefined ? undefined : Buffer.from(signable, 'utf8');
  for (const server of requiredSigningServers(pdu, version)) {
    const byKey = Object.hasOwn(signatures, server) ? signatures[server] : undefined;
    let verified = false;
    if (isJsonObject(byKey)) {
      for (const keyId of Object.keys(byKey)) {
        if (!keyId.startsWith('ed25519:')) continue;
        const signature = byKey[keyId];
        if (typeof signature !== 'string') continue;
        const key = lookup(server, keyId);
        if (key === undefined) continue;
        if (version.enforceKeyValidity && key.validUntilTs < pdu.origin_server_ts) continue;
        if (message === undefined) message = signableMessage(pdu, version);
        if (message === null) return { ok: false, reason: 'event has no canonical JSON form' };
        if (verifyBytes(message, signature, key.publicKey)) {
          verified = true;
          break;
        }
      }
    }
    if (!verified) return { ok: false, reason: `no valid signature from ${server}` };
  }
  return { ok: true };
}

function signableMessage(pdu: Pdu, version: RoomVersion): Buffer | null {
  try {
    return Buffer.from(signableEventText(pdu, version), 'utf8');
  } catch {
    return null;
  }
}
