// Checks 1–3 on a received PDU (server-server API, "Checks performed on receipt of a PDU"):
//   1. it is a valid event of its room version, otherwise it is dropped;
//   2. it passes signature checks, otherwise it is dropped;
//   3. it passes hash checks, otherwise it is redacted before being processed further.
// Checks 4–6 (auth events, state before, current state) belong to the room's input queue, which
// takes what passes here. Keys come through the KeyRing port, once per call, so that the PDUs of a
// transaction (up to 50) cost one key lookup together.

import { checkEventSignatures, requiredSigningServers } from '../../protocol/event-signatures.js';
import { toRoomEvent, type Pdu, type RoomEvent } from '../../protocol/events.js';
import { checkContentHash, eventIdFromSignable, signableEventText } from '../../protocol/hashes.js';
import { isJsonObject } from '../../protocol/json.js';
import { checkPduFormat, type PduFormatOptions } from '../../protocol/pdu-format.js';
import { redactEvent } from '../../protocol/redaction.js';
import type { RoomVersion } from '../../protocol/room-versions.js';
import { lookupIn, type FoundKeys, type KeyRequest, type KeyRing } from './key-ring.js';

/** A PDU that passed checks 1–3, ready for the auth checks. */
export interface CheckedPdu {
  readonly ok: true;
  /** The event as received (its `unsigned` reduced), or its redacted form when `redacted`. */
  readonly pdu: Pdu;
  readonly eventId: string;
  readonly event: RoomEvent;
  /** The content hash did not match, so `pdu` and `event` are the redacted form. */
  readonly redacted: boolean;
}

/** A PDU to drop, and why. */
export interface DroppedPdu {
  readonly ok: false;
  readonly reason: string;
}

export type PduCheckResult = CheckedPdu | DroppedPdu;

export interface ReceivedPdu {
  /** The PDU as parsed from the request body. */
  readonly json: unknown;
  /** The version of the room it claims to be in. */
  readonly version: RoomVersion;
  readonly options?: PduFormatOptions;
}

/** A PDU past check 1, waiting for its keys. */
interface Pending {
  readonly pdu: Pdu;
  readonly version: RoomVersion;
  /** What the signatures and the reference hash cover (signableEventText). */
  readonly signable: string;
  readonly requests: KeyRequest[];
  /** The room the PDU must be of, when the caller named one. */
  readonly roomId: string | undefined;
}

function drop(reason: string): DroppedPdu {
  return { ok: false, reason };
}

/** Check 1, and the keys check 2 will need; a DroppedPdu when the PDU fails before any key is asked for. */
function prepare(item: ReceivedPdu): Pending | DroppedPdu {
  const { version } = item;
  // 1. A valid event for its room version.
  const format = checkPduFormat(item.json, version, item.options);
  if (!format.ok) return format;
  const pdu = format.pdu;
  let signable: string;
  try {
    signable = signableEventText(pdu, version);
  } catch (e) {
    return drop(`event: no canonical JSON form: ${e instanceof Error ? e.message : String(e)}`);
  }
  // 2 (first half). The keys of every signature that could count: ed25519 ones from the servers
  // that must sign. A server without any such signature fails without asking the key ring.
  const validAt = version.enforceKeyValidity ? pdu.origin_server_ts : 0;
  const requests: KeyRequest[] = [];
  for (const server of requiredSigningServers(pdu, version)) {
    const byKey = Object.hasOwn(pdu.signatures, server) ? pdu.signatures[server] : undefined;
    let any = false;
    if (isJsonObject(byKey)) {
      for (const keyId of Object.keys(byKey)) {
        if (!keyId.startsWith('ed25519:')) continue;
        requests.push({ serverName: server, keyId, validAt });
        any = true;
      }
    }
    if (!any) return drop(`signatures: no signature from ${server}`);
  }
  return { pdu, version, signable, requests, roomId: item.options?.roomId };
}

/** Checks 2 (second half) and 3, once the keys are known. */
function finish(p: Pending, found: FoundKeys): PduCheckResult {
  const { version, signable } = p;
  // 2. Signatures, over the redacted form: they hold for full and redacted copies alike.
  const signatures = checkEventSignatures(p.pdu, version, lookupIn(found), signable);
  if (!signatures.ok) return drop(`signatures: ${signatures.reason}`);
  // 3. The content hash; a mismatch means a redacted copy (or a tampered one): keep only what
  // the signatures cover. The reference hash, hence the event id, is the same for both forms.
  const redacted = !checkContentHash(p.pdu, version);
  const pdu = redacted ? redactEvent(p.pdu, version) : p.pdu;
  const eventId = eventIdFromSignable(pdu, signable, version);
  const event = toRoomEvent(pdu, eventId, version);
  // 1, for a v12 create event: the room it names is its own id (the format check could not know it).
  if (p.roomId !== undefined && event.room_id !== p.roomId) return drop(`room_id: the event is for ${event.room_id}, not ${p.roomId}`);
  return { ok: true, pdu, eventId, event, redacted };
}

/** The requests of every pending PDU, one per key: the latest `validAt` asked for each. */
function mergedRequests(pending: readonly Pending[]): KeyRequest[] {
  if (pending.length === 1) return pending[0]!.requests;
  const byServer = new Map<string, Map<string, KeyRequest>>();
  for (const p of pending) {
    for (const r of p.requests) {
      let byId = byServer.get(r.serverName);
      if (byId === undefined) byServer.set(r.serverName, (byId = new Map()));
      const seen = byId.get(r.keyId);
      if (seen === undefined || seen.validAt < r.validAt) byId.set(r.keyId, r);
    }
  }
  const out: KeyRequest[] = [];
  for (const byId of byServer.values()) out.push(...byId.values());
  return out;
}

/**
 * Checks 1–3 on many received PDUs (a transaction's, a /state answer's ...), with one key-ring
 * call for all of them. The results are in the order of `items`. Never rejects: a key ring that
 * fails drops the PDUs that needed it, with its error as the reason.
 */
export async function checkReceivedPdus(items: readonly ReceivedPdu[], keyRing: KeyRing): Promise<PduCheckResult[]> {
  const results: (PduCheckResult | Pending)[] = items.map(prepare);
  const pending = results.filter((r): r is Pending => !('ok' in r));
  if (pending.length === 0) return results as PduCheckResult[];
  let found: FoundKeys;
  try {
    found = await keyRing.verifyKeys(mergedRequests(pending));
  } catch (e) {
    const reason = `signatures: signing keys unavailable: ${e instanceof Error ? e.message : String(e)}`;
    return results.map((r) => ('ok' in r ? r : drop(reason)));
  }
  return results.map((r) => ('ok' in r ? r : finish(r, found)));
}

/** Checks 1–3 on one received PDU of a room of `version`. */
export async function checkReceivedPdu(
  json: unknown,
  version: RoomVersion,
  keyRing: KeyRing,
  options?: PduFormatOptions,
): Promise<PduCheckResult> {
  const [result] = await checkReceivedPdus([{ json, version, ...(options !== undefined ? { options } : {}) }], keyRing);
  return result!;
}
