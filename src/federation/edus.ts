// EDUs other servers send: what each may claim is checked here. An origin speaks only for its own
// users: typing and receipts only in rooms they are joined to (the typing and receipt services
// check membership); device lists, signing keys and presence only of users sharing a room with a
// user of this server; to-device messages only from its users, delivered to this server's users.

import { isUserOf } from '../protocol/ids/user-id.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { DeviceKeyService } from '../users/device-keys.js';
import type { DeviceChange } from '../users/remote-device-lists.js';
import { MAX_STATUS_MSG_LENGTH, PRESENCE_STATES, type PresenceService, type PresenceState } from '../users/presence.js';
import type { ToDeviceService } from '../users/to-device.js';
import { DEFAULT_TYPING_TIMEOUT_MS, type TypingService } from '../users/typing.js';
import { crossSigningKeyOf, namesDevice } from './remote-keys.js';
import type { EduHandlers } from './transactions.js';

export interface EduDeps {
  readonly typing: Pick<TypingService, 'start' | 'stop'>;
  readonly isJoined: (userId: string, roomId: string) => Promise<boolean>;
  readonly receipts: { sendReceipt(userId: string, roomId: string, receiptType: string, eventId: string, threadId?: unknown): Promise<void> };
  readonly toDevice?: Pick<ToDeviceService, 'deliverRemote'>;
  readonly deviceLists?: Pick<DeviceKeyService, 'remoteDeviceChanged' | 'remoteSigningKeysChanged'>;
  readonly presence?: Pick<PresenceService, 'setRemotePresence'>;
  /** Whether a user of this server is joined to a room the user is joined to. */
  readonly sharesRoomWithLocalUser?: (userId: string) => Promise<boolean>;
}

/** Receipt types that travel between servers (`m.read.private` never does). */
const FEDERATED_RECEIPTS = new Set(['m.read']);

export function eduHandlers(deps: EduDeps): EduHandlers {
  const shares = (userId: string) => deps.sharesRoomWithLocalUser?.(userId) ?? Promise.resolve(false);
  /** The user of the origin an update is about, if it is one sharing a room with ours. */
  const aboutSharingUser = async (origin: string, content: JsonObject): Promise<string | undefined> => {
    const userId = content['user_id'];
    return deps.deviceLists !== undefined && isUserOf(userId, origin) && (await shares(userId)) ? userId : undefined;
  };
  return {
    // m.typing: {room_id, user_id, typing}; a remote typist times out like a local one.
    async typing(origin: string, content: JsonObject) {
      const { room_id: roomId, user_id: userId, typing } = content;
      if (typeof roomId !== 'string' || typeof typing !== 'boolean' || !isUserOf(userId, origin)) return;
      if (!(await deps.isJoined(userId, roomId))) return;
      if (typing) deps.typing.start(userId, roomId, DEFAULT_TYPING_TIMEOUT_MS);
      else deps.typing.stop(userId, roomId);
    },
    // m.receipt: {roomId: {receiptType: {userId: {event_ids, data: {ts, thread_id?}}}}}.
    async receipt(origin: string, content: JsonObject) {
      for (const [roomId, byType] of Object.entries(content)) {
        if (!isJsonObject(byType)) continue;
        for (const [receiptType, byUser] of Object.entries(byType)) {
          if (!FEDERATED_RECEIPTS.has(receiptType) || !isJsonObject(byUser)) continue;
          for (const [userId, receipt] of Object.entries(byUser)) {
            if (!isUserOf(userId, origin) || !isJsonObject(receipt)) continue;
            const eventIds = receipt['event_ids'];
            const eventId = Array.isArray(eventIds) ? eventIds[0] : undefined;
            if (typeof eventId !== 'string') continue;
            const data = isJsonObject(receipt['data']) ? receipt['data'] : {};
            // The receipt service checks the membership and the event, and refuses what fails.
            await deps.receipts.sendReceipt(userId, roomId, receiptType, eventId, data['thread_id']).catch(() => undefined);
          }
        }
      }
    },
    // m.direct_to_device: {sender, type, message_id, messages: {user: {device | '*': content}}}.
    async directToDevice(origin: string, content: JsonObject) {
      const { sender, type, message_id: messageId, messages } = content;
      if (deps.toDevice === undefined || !isUserOf(sender, origin)) return;
      if (typeof type !== 'string' || typeof messageId !== 'string' || !isJsonObject(messages)) return;
      await deps.toDevice.deliverRemote(origin, sender, type, messageId, messages);
    },
    // m.device_list_update: {user_id, device_id, stream_id, prev_id, deleted?, keys?,
    // device_display_name?}: applied to the copy kept of the user's devices (or, when a change
    // was missed, the copy is fetched again), and our users re-read them.
    async deviceListUpdate(origin: string, content: JsonObject) {
      const userId = await aboutSharingUser(origin, content);
      if (userId !== undefined) await deps.deviceLists?.remoteDeviceChanged(userId, readDeviceChange(userId, content));
    },
    // m.signing_key_update: {user_id, master_key?, self_signing_key?}: a change of that user's keys too.
    async signingKeyUpdate(origin: string, content: JsonObject) {
      const userId = await aboutSharingUser(origin, content);
      if (userId === undefined) return;
      await deps.deviceLists?.remoteSigningKeysChanged(userId, {
        masterKey: crossSigningKeyOf(content['master_key'], userId, 'master'),
        selfSigningKey: crossSigningKeyOf(content['self_signing_key'], userId, 'self_signing'),
      });
    },
    // m.presence: {push: [{user_id, presence, status_msg?, last_active_ago, currently_active?}]}.
    async presence(origin: string, content: JsonObject) {
      const push = content['push'];
      if (deps.presence === undefined || !Array.isArray(push)) return;
      for (const update of push) {
        if (!isJsonObject(update)) continue;
        const { user_id: userId, presence, status_msg: statusMsg, last_active_ago: ago } = update;
        if (!isUserOf(userId, origin) || typeof presence !== 'string' || !(PRESENCE_STATES as readonly string[]).includes(presence)) continue;
        if (!(await shares(userId))) continue;
        await deps.presence.setRemotePresence(userId, {
          presence: presence as PresenceState,
          statusMsg: typeof statusMsg === 'string' ? statusMsg.slice(0, MAX_STATUS_MSG_LENGTH) : null,
          lastActiveAgo: typeof ago === 'number' && Number.isFinite(ago) ? ago : 0,
        });
      }
    },
  };
}

/**
 * An m.device_list_update's change, or undefined when it cannot be applied as it stands (no
 * device or stream ID, or keys that do not name the user and device).
 */
function readDeviceChange(userId: string, content: JsonObject): DeviceChange | undefined {
  const { device_id: deviceId, stream_id: streamId, deleted, keys, device_display_name: name } = content;
  const prevId = content['prev_id'] ?? [];
  if (typeof deviceId !== 'string' || typeof streamId !== 'number' || !Number.isSafeInteger(streamId)) return undefined;
  if (!Array.isArray(prevId) || !prevId.every((p): p is number => typeof p === 'number' && Number.isSafeInteger(p))) return undefined;
  if (deleted === true) return { deviceId, streamId, prevIds: prevId, deleted: true };
  if (keys !== undefined && keys !== null && !namesDevice(keys, userId, deviceId)) return undefined;
  return { deviceId, streamId, prevIds: prevId, deleted: false, keys: keys ?? undefined, displayName: typeof name === 'string' ? name : undefined };
}
