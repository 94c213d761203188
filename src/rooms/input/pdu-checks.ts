// Placeholder of checks 1–3 until the full module lands.
import type { Pdu, RoomEvent } from '../../protocol/events.js';
import { toRoomEvent } from '../../protocol/events.js';
import { checkEventSignatures, type VerifyKeyLookup } from '../../protocol/event-signatures.js';
import { checkContentHash, computeEventId } from '../../protocol/hashes.js';
import { redactEvent } from '../../protocol/redaction.js';
import type { RoomVersion } from '../../protocol/room-versions.js';

export interface KeyRing {
  readonly lookup: VerifyKeyLookup;
}
export const noKeys: KeyRing = { lookup: () => undefined };

export async function checkReceivedPdu(
  json: unknown,
  version: RoomVersion,
  keys: KeyRing,
): Promise<{ ok: true; pdu: Pdu; eventId: string; event: RoomEvent; redacted: boolean } | { ok: false; reason: string }> {
  const pdu = json as Pdu;
  const sig = checkEventSignatures(pdu, version, keys.lookup);
  if (!sig.ok) return { ok: false, reason: sig.reason };
  const eventId = version.eventIdFormat === 'v1' ? (pdu as unknown as { event_id: string }).event_id : computeEventId(pdu, version);
  if (!checkContentHash(pdu, version)) {
    const redacted = redactEvent(pdu, version) as Pdu;
    return { ok: true, pdu: redacted, eventId, event: toRoomEvent(redacted, eventId, version), redacted: true };
  }
  return { ok: true, pdu, eventId, event: toRoomEvent(pdu, eventId, version), redacted: false };
}
