// Send-to-device messaging. Messages are queued per recipient device on the to_device stream and
// delivered by sync exactly once: a sync hands out those after its `since` position, and the next
// sync, by presenting a later position, acknowledges them and they are deleted.
//
// Messages for other servers' users are handed, per server, to the `remote` port (federation's
// durable EDU queue) inside the same transaction as the sender's transaction id, so a client's
// retry queues nothing twice and a committed send is never lost. Other servers' users' messages
// (`deliverRemote`) are delivered here like local ones, once per (origin, sender, message id).

import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { HearthError } from '../protocol/errors.js';
import { parseUserId, serverNameOf } from '../protocol/ids.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { allocateStreamPosition } from '../streams/positions.js';
import {
  claimInboundToDevice,
  claimToDeviceTxn,
  deleteToDeviceUpTo,
  insertToDeviceMessages,
  pruneInboundToDevice,
  selectDeviceIds,
  selectToDevice,
  selectToDeviceAfter,
  type AddressedToDevice,
  type QueuedToDevice,
} from '../storage/user-data/to-device.js';
import type { StreamBus } from '../streams/bus.js';

/** The spec's recommended cap on messages per sync response. */
export const DEFAULT_TO_DEVICE_LIMIT = 100;
const MAX_EVENT_TYPE_LENGTH = 255;
/** Longer than the spec's 32 codepoints: a sender that overshoots is still deduplicated, not dropped. */
const MAX_MESSAGE_ID_LENGTH = 255;
/** Received message ids are kept this long: an origin retries for far less. */
const MESSAGE_IDS_KEPT_MS = 7 * 24 * 3600_000;
const PRUNE_EVERY_MS = 3600_000;

/** One other server's share of a send: its users' messages (device id or `*` → content). */
export interface RemoteToDeviceMessage {
  readonly sender: string;
  readonly type: string;
  /** Unique per send: the receiving server delivers each once. */
  readonly messageId: string;
  readonly messages: Record<string, JsonObject>;
}

/** Where messages for other servers' users go (federation's durable EDU queue). */
export interface RemoteToDevice {
  /** Queues the message for `destination` within the send's transaction. */
  queue(trx: Kysely<Schema>, destination: string, message: RemoteToDeviceMessage): Promise<void>;
  /** The send committed: deliver what it queued. */
  send(destinations: readonly string[]): void;
}

export interface ToDeviceServiceDeps {
  readonly db: Kysely<Schema>;
  readonly notifier: StreamBus;
  readonly serverName: string;
  /** The user's device ids, for `*`; by default read from the devices table. */
  readonly deviceIds?: (userId: string) => Promise<readonly string[]>;
  /** Messages for other servers' users; without it (federation off) they are dropped. */
  readonly remote?: RemoteToDevice;
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
  private lastPrune = 0;

  constructor(private readonly deps: ToDeviceServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.deviceIds = deps.deviceIds ?? ((userId) => selectDeviceIds(deps.db, userId));
  }

  /**
   * PUT /sendToDevice/{eventType}/{txnId} with `messages` (user → device or `*` → content).
   * A repeated txnId from the same device queues nothing again. Messages for users on other
   * servers go to their servers (dropped when federation is off).
   */
  async send(sender: ToDeviceSender, eventType: string, txnId: string, messages: unknown): Promise<void> {
    checkEventType(eventType);
    if (!isJsonObject(messages)) throw HearthError.badJson("'messages' must be an object");
    const { local: queued, remote } = await this.expand(sender.userId, eventType, messages);
    const outbound = this.deps.remote;
    const sent = await this.deps.db.transaction().execute(async (trx) => {
      if (!(await claimToDeviceTxn(trx, sender.userId, sender.deviceId ?? '', txnId, this.now()))) return undefined;
      if (outbound !== undefined) {
        for (const [destination, byUser] of remote) {
          const messageId = randomBytes(12).toString('base64url');
          await outbound.queue(trx, destination, { sender: sender.userId, type: eventType, messageId, messages: byUser });
        }
      }
      if (queued.length === 0) return { position: undefined };
      const p = await allocateStreamPosition(trx, 'to_device');
      await insertToDeviceMessages(trx, queued, p);
      return { position: p };
    });
    if (sent === undefined) return;
    if (outbound !== undefined && remote.size > 0) outbound.send([...remote.keys()]);
    if (sent.position === undefined) return;
    const recipients = [...new Set(queued.map((m) => m.userId))];
    this.deps.notifier.notify({ stream: 'to_device', position: sent.position, userIds: recipients });
  }

  /**
   * m.direct_to_device from `origin` (which the caller checked `sender` belongs to): delivered to
   * this server's users as a local sender's messages are; other users named are ignored. A message
   * id seen before from the same origin and sender delivers nothing again.
   */
  async deliverRemote(origin: string, sender: string, eventType: string, messageId: string, messages: JsonObject): Promise<void> {
    checkEventType(eventType);
    if (messageId.length === 0 || messageId.length > MAX_MESSAGE_ID_LENGTH) throw HearthError.invalidParam('Bad message_id');
    const { local: queued } = await this.expand(sender, eventType, messages, { localOnly: true });
    const now = this.now();
    const position = await this.deps.db.transaction().execute(async (trx) => {
      if (!(await claimInboundToDevice(trx, origin, sender, messageId, now))) return undefined;
      if (queued.length === 0) return undefined;
      const p = await allocateStreamPosition(trx, 'to_device');
      await insertToDeviceMessages(trx, queued, p);
      return p;
    });
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await pruneInboundToDevice(this.deps.db, now - MESSAGE_IDS_KEPT_MS);
    }
    if (position === undefined) return;
    this.deps.notifier.notify({ stream: 'to_device', position, userIds: [...new Set(queued.map((m) => m.userId))] });
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

  /** Messages to any device with positions in (after, upTo], oldest first, about `limit` (a position's messages stay together). */
  toDeviceAfter(after: number, upTo: number, limit: number): Promise<AddressedToDevice[]> {
    return selectToDeviceAfter(this.deps.db, after, upTo, limit);
  }

  /** Deletes what a sync with `since` at `position` acknowledges; returns how many. */
  async deleteToDeviceUpTo(userId: string, deviceId: string, position: number): Promise<number> {
    return deleteToDeviceUpTo(this.deps.db, userId, deviceId, position);
  }

  /** Forgets transaction ids older than the age (they only guard against client retries). */
  async pruneTransactions(olderThanMs: number): Promise<void> {
    await this.deps.db.deleteFrom('to_device_txns').where('created_ts', '<', this.now() - olderThanMs).execute();
  }

  /**
   * One message per local recipient device (`*` names every device of the user, a later key
   * wins), and the messages for other servers' users by server, as given (their servers expand `*`).
   */
  private async expand(
    sender: string,
    type: string,
    messages: JsonObject,
    options: { localOnly?: boolean } = {},
  ): Promise<{ local: QueuedToDevice[]; remote: Map<string, Record<string, JsonObject>> }> {
    const local: QueuedToDevice[] = [];
    const remote = new Map<string, Record<string, JsonObject>>();
    for (const [userId, byDevice] of Object.entries(messages)) {
      const recipient = parseUserId(userId);
      if (!isJsonObject(byDevice)) throw HearthError.badJson(`messages.${userId} must be an object`);
      for (const [deviceId, content] of Object.entries(byDevice)) {
        if (!isJsonObject(content)) throw HearthError.badJson(`messages.${userId}.${deviceId} must be an object`);
      }
      const server = serverNameOf(recipient);
      if (server !== this.deps.serverName) {
        if (options.localOnly) continue;
        const forServer = remote.get(server) ?? {};
        forServer[recipient] = byDevice;
        remote.set(server, forServer);
        continue;
      }
      const perDevice = new Map<string, JsonObject>();
      for (const [deviceId, content] of Object.entries(byDevice)) {
        if (deviceId === '*') for (const d of await this.deviceIds(recipient)) perDevice.set(d, content as JsonObject);
        else perDevice.set(deviceId, content as JsonObject);
      }
      for (const [deviceId, content] of perDevice) local.push({ userId: recipient, deviceId, sender, type, content });
    }
    return { local, remote };
  }
}

function checkEventType(eventType: string): void {
  if (eventType.length === 0 || eventType.length > MAX_EVENT_TYPE_LENGTH) {
    throw HearthError.invalidParam(`Event type must be 1 to ${MAX_EVENT_TYPE_LENGTH} characters`);
  }
}
