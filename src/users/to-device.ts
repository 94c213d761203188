// Send-to-device messaging. Messages are queued per recipient device on the to_device stream and
// delivered by sync exactly once: a sync hands out those after its `since` position, and the next
// sync, by presenting a later position, acknowledges them and they are deleted.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseUserId, serverNameOf } from '../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { allocateStreamPosition } from '../streams/positions.js';
import {
  claimToDeviceTxn,
  deleteToDeviceUpTo,
  insertToDeviceMessages,
  selectDeviceIds,
  selectToDevice,
  type QueuedToDevice,
} from '../storage/user-data/to-device.js';
import type { StreamBus } from '../streams/bus.js';

/** The spec's recommended cap on messages per sync response. */
export const DEFAULT_TO_DEVICE_LIMIT = 100;
const MAX_EVENT_TYPE_LENGTH = 255;

export interface ToDeviceServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly serverName: string;
  /** The user's device ids, for `*`; by default read from the devices table. */
  readonly deviceIds?: (userId: string) => Promise<readonly string[]>;
  readonly now?: () => number;
}

export interface ToDeviceEvent {
  readonly sender: string;
  readonly type: string;
  readonly content: JsonObject;
}

export interface ToDeviceBatch {
  readonly events: ToDeviceEvent[];
  /** The to_device position the next sync token should carry. */
  readonly position: number;
  /** More messages are waiting beyond `position`. */
  readonly limited: boolean;
}

export interface ToDeviceSender {
  readonly userId: string;
  /** Null for tokens without a device; their transaction ids share one namespace. */
  readonly deviceId: string | null;
}

export class ToDeviceService {
  private readonly now: () => number;
  private readonly deviceIds: (userId: string) => Promise<readonly string[]>;

  constructor(private readonly deps: ToDeviceServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.deviceIds = deps.deviceIds ?? ((userId) => selectDeviceIds(deps.db, userId));
  }

  /**
   * PUT /sendToDevice/{eventType}/{txnId} with `messages` (user → device or `*` → content).
   * A repeated txnId from the same device queues nothing again. Messages for users on other
   * servers are dropped until federation can carry them.
   */
  async send(sender: ToDeviceSender, eventType: string, txnId: string, messages: unknown): Promise<void> {
    if (eventType.length === 0 || eventType.length > MAX_EVENT_TYPE_LENGTH) {
      throw HearthError.invalidParam(`Event type must be 1 to ${MAX_EVENT_TYPE_LENGTH} characters`);
    }
    if (!isJsonObject(messages)) throw HearthError.badJson("'messages' must be an object");
    const queued = await this.expand(sender.userId, eventType, messages);
    const position = await this.deps.db.transaction().execute(async (trx) => {
      if (!(await claimToDeviceTxn(trx, sender.userId, sender.deviceId ?? '', txnId, this.now()))) return undefined;
      if (queued.length === 0) return undefined;
      const p = await allocateStreamPosition(trx, 'to_device');
      await insertToDeviceMessages(trx, queued, p);
      return p;
    });
    if (position === undefined) return;
    const recipients = [...new Set(queued.map((m) => m.userId))];
    this.deps.notifier.notify({ stream: 'to_device', position, userIds: recipients });
  }

  /**
   * For sync: the device's messages after `afterPosition` up to `upTo` (default: the notifier's
   * current position), oldest first, at most `limit`. When limited, `position` stops at the last
   * message handed out so the rest come with the next sync.
   */
  async toDeviceFor(
    userId: string,
    deviceId: string,
    afterPosition: number,
    limit = DEFAULT_TO_DEVICE_LIMIT,
    upTo = this.deps.notifier.current().to_device,
  ): Promise<ToDeviceBatch> {
    const bound = Math.max(upTo, afterPosition);
    const rows = await selectToDevice(this.deps.db, userId, deviceId, afterPosition, bound, limit + 1);
    const limited = rows.length > limit;
    const delivered = limited ? rows.slice(0, limit) : rows;
    return {
      events: delivered.map((r) => ({ sender: r.sender, type: r.type, content: r.content })),
      position: limited ? delivered[delivered.length - 1]!.position : bound,
      limited,
    };
  }

  /** Deletes what a sync with `since` at `position` acknowledges; returns how many. */
  async deleteToDeviceUpTo(userId: string, deviceId: string, position: number): Promise<number> {
    return deleteToDeviceUpTo(this.deps.db, userId, deviceId, position);
  }

  /** Forgets transaction ids older than the age (they only guard against client retries). */
  async pruneTransactions(olderThanMs: number): Promise<void> {
    await this.deps.db.deleteFrom('to_device_txns').where('created_ts', '<', this.now() - olderThanMs).execute();
  }

  /** One message per recipient device; `*` names every device of the user, a later key wins. */
  private async expand(sender: string, type: string, messages: JsonObject): Promise<QueuedToDevice[]> {
    const out: QueuedToDevice[] = [];
    for (const [userId, byDevice] of Object.entries(messages)) {
      const recipient = parseUserId(userId);
      if (!isJsonObject(byDevice)) throw HearthError.badJson(`messages.${userId} must be an object`);
      const perDevice = new Map<string, JsonObject>();
      for (const [deviceId, content] of Object.entries(byDevice)) {
        if (!isJsonObject(content)) throw HearthError.badJson(`messages.${userId}.${deviceId} must be an object`);
        if (deviceId === '*') {
          if (serverNameOf(recipient) === this.deps.serverName) {
            for (const d of await this.deviceIds(recipient)) perDevice.set(d, content);
          }
        } else {
          perDevice.set(deviceId, content);
        }
      }
      if (serverNameOf(recipient) !== this.deps.serverName) continue;
      for (const [deviceId, content] of perDevice) out.push({ userId: recipient, deviceId, sender, type, content });
    }
    return out;
  }
}
