// What a service that asked for ephemeral data (`receive_ephemeral`, or MSC2409's
// `de.sorunome.msc2409.push_ephemeral`) is sent beside its events:
// - m.typing and m.receipt of the rooms it is interested in (as for events, interest.ts, but by
//   the rooms' members now), each with its `room_id`; others' private receipts are left out, as they are from any client;
// - m.presence of its users and of users sharing a room with one of them;
// - to-device messages to its users' devices (MSC2409), each with `to_user_id` and `to_device_id`.
// Receipts, presence and to-device messages are read from their streams between two positions,
// so a service that was down or restarted is sent what it missed; typing lives in memory and only
// the rooms whose typing changed are looked at.

import type { JsonObject } from '../protocol/json.js';
import type { EphemeralPositions } from '../storage/appservice/queues.js';
import type { ReceiptRow } from '../storage/user-data/receipts.js';
import type { AddressedToDevice } from '../storage/user-data/to-device.js';
import { receiptContents } from '../users/receipts.js';
import type { ServiceInterest } from './interest.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';

/** Items per stream per transaction. */
export const EPHEMERAL_PER_TRANSACTION = 100;

const PRIVATE_READ = 'm.read.private';

export interface EphemeralSources {
  /** Who types in the room now. */
  typingIn(roomId: string): readonly string[];
  receiptsAfter(after: number, upTo: number, limit: number): Promise<readonly ReceiptRow[]>;
  presenceAfter(after: number, upTo: number, limit: number): Promise<readonly { readonly position: number; readonly event: { readonly sender: string } & object }[]>;
  toDeviceAfter(after: number, upTo: number, limit: number): Promise<readonly AddressedToDevice[]>;
  /** The rooms the user is joined to (any server's user). */
  joinedRooms(userId: string): Promise<readonly string[]>;
}

export interface EphemeralBatch {
  /** m.typing, m.receipt and m.presence events, for `ephemeral`. */
  readonly ephemeral: JsonObject[];
  /** For MSC2409's `to_device`. */
  readonly toDevice: JsonObject[];
  /** How far each stream was read. */
  readonly reached: EphemeralPositions;
  /** A stream had more than one transaction's worth: read again from `reached`. */
  readonly more: boolean;
}

/** Reads the streams in (from, upTo] and the typing of `typingRooms`, keeping what the service is sent. */
export async function collectEphemeral(
  sources: EphemeralSources,
  services: AppServices,
  service: AppServiceRegistration,
  interest: ServiceInterest,
  from: EphemeralPositions,
  upTo: EphemeralPositions,
  typingRooms: Iterable<string>,
): Promise<EphemeralBatch> {
  const limit = EPHEMERAL_PER_TRANSACTION;
  const sender = services.senderOf(service);
  const ephemeral: JsonObject[] = [];
  const toDevice: JsonObject[] = [];
  let more = false;
  // Where a stream's read stopped: upTo, or its last row when it read a whole batch.
  const reachedOf = (rows: readonly { position: number }[], stream: keyof EphemeralPositions): number => {
    if (rows.length < limit) return Math.max(from[stream], upTo[stream]);
    more = true;
    return rows[rows.length - 1]!.position;
  };

  // Rooms are judged by their members now, once per pass.
  const roomsWanted = new Map<string, Promise<boolean>>();
  const roomWanted = (roomId: string): Promise<boolean> => {
    let wanted = roomsWanted.get(roomId);
    if (wanted === undefined) roomsWanted.set(roomId, (wanted = interest.interestedInRoomNow(roomId)));
    return wanted;
  };
  const roomsWithUsers = new Map<string, Promise<boolean>>();
  const hasUsers = (roomId: string): Promise<boolean> => {
    let has = roomsWithUsers.get(roomId);
    if (has === undefined) roomsWithUsers.set(roomId, (has = interest.hasUsersInNow(roomId)));
    return has;
  };

  for (const roomId of typingRooms) {
    if (await roomWanted(roomId)) ephemeral.push({ type: 'm.typing', room_id: roomId, content: { user_ids: [...sources.typingIn(roomId)] } });
  }

  const receipts = from.receipts < upTo.receipts ? await sources.receiptsAfter(from.receipts, upTo.receipts, limit) : [];
  const kept: ReceiptRow[] = [];
  for (const r of receipts) {
    if (r.receiptType === PRIVATE_READ && r.userId !== sender) continue;
    if (await roomWanted(r.roomId)) kept.push(r);
  }
  for (const [roomId, contents] of receiptContents(kept)) {
    for (const content of contents) ephemeral.push({ type: 'm.receipt', room_id: roomId, content: content as JsonObject });
  }

  const presence = from.presence < upTo.presence ? await sources.presenceAfter(from.presence, upTo.presence, limit) : [];
  for (const p of presence) {
    if (await presenceWanted(sources, services, service, hasUsers, p.event.sender)) ephemeral.push(p.event as unknown as JsonObject);
  }

  const messages = from.to_device < upTo.to_device ? await sources.toDeviceAfter(from.to_device, upTo.to_device, limit) : [];
  for (const m of messages) {
    if (!services.isSenderOrInUserNamespace(service, m.userId)) continue;
    toDevice.push({ type: m.type, sender: m.sender, to_user_id: m.userId, to_device_id: m.deviceId, content: m.content });
  }

  const reached: EphemeralPositions = {
    receipts: reachedOf(receipts, 'receipts'),
    presence: reachedOf(presence, 'presence'),
    to_device: reachedOf(messages, 'to_device'),
  };
  return { ephemeral, toDevice, reached, more };
}

/** A user's presence goes to the service when the user is its own or shares a room with one of its users. */
async function presenceWanted(
  sources: EphemeralSources,
  services: AppServices,
  service: AppServiceRegistration,
  hasUsers: (roomId: string) => Promise<boolean>,
  userId: string,
): Promise<boolean> {
  if (services.isSenderOrInUserNamespace(service, userId)) return true;
  for (const roomId of await sources.joinedRooms(userId)) if (await hasUsers(roomId)) return true;
  return false;
}
