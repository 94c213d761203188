// The pushers: each http pusher is sent its user's notifications (push/actions.ts), one POST to
// its gateway per notification, in stream order. How far a pusher got is stored with it, so a
// restart resends only what its gateway had not taken. A failing gateway is retried after a pause
// that doubles up to a cap; one failing for longer than a day has the notifications it missed
// dropped (they are stale by then), as the reference server does. A pushkey the gateway rejects
// removes its pusher. Work is per user: one user's failing gateway never holds up another's.

import type { Kysely } from 'kysely';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { PushAction } from '../protocol/push-rules/index.js';
import type { RoomReader } from '../rooms/reader.js';
import { deletePusher, listPushers, type PusherRow } from '../storage/accounts/pushers.js';
import { latestNotificationPerThread, notificationsAfter, savePusherProgress, startNewPushers, allPushers, type NotificationRow } from '../storage/push/notifications.js';
import { ownReadPositionsByThread, READ_RECEIPT_TYPES, readThrough } from '../storage/sync/memberships.js';
import type { Schema } from '../storage/schema.js';
import type { ServiceHttp } from '../appservice/service-api.js';
import { notifyBody, type NotifyEvent, type NotifyFacts } from './payload.js';

/** Notifications read per pass. */
const BATCH = 20;
const DEFAULT_RETRY = { minMs: 1000, maxMs: 3_600_000 };
const GIVE_UP_MS = 24 * 3_600_000;

export interface PushSenderOptions {
  readonly db: Kysely<Schema>;
  readonly reader: RoomReader;
  readonly http: ServiceHttp;
  /** The events stream's position now (where pushers set before they were sent anything start). */
  readonly eventsPosition: () => number;
  readonly log: { warn(message: string, details?: object): void };
  /** Pauses after failures, doubling (default 1 s to 1 h). */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  /** How long a gateway may fail before what it missed is dropped (default a day). */
  readonly giveUpMs?: number;
  readonly now?: () => number;
}

interface PreparedNotification {
  readonly event: NotifyEvent;
  readonly actions: readonly PushAction[];
  readonly facts: NotifyFacts;
}

/** Within one pass, notifications by position, prepared once for all the user's pushers. */
type Prepared = Map<number, Promise<PreparedNotification | undefined>>;

/** What failed, for logs and metrics. */
class GatewayError extends Error {}

class UserQueue {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** Per pusher (app_id and pushkey): the pause after its next failure. */
  private readonly backoff = new Map<string, number>();
  /** Per failing pusher: no attempt before this time (new notifications do not hurry it). */
  private readonly notBefore = new Map<string, number>();

  constructor(
    private readonly sender: PushSender,
    readonly userId: string,
  ) {}

  /** Makes a pass soon; a pass under way makes another when it ends. */
  wake(): void {
    if (this.sender.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.running = this.pass()
      .catch((err) => this.sender.options.log.warn('push: pass failed', { user: this.userId, error: String(err) }))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async pass(): Promise<void> {
    const { db } = this.sender.options;
    const all = await listPushers(db, this.userId);
    // (A pusher set meanwhile has woken this queue again: the next pass reads it.)
    if (all.length === 0 && !this.again) this.sender.noPushers(this.userId);
    const pushers = all.filter((p) => p.kind === 'http');
    let retryIn: number | undefined;
    const prepared: Prepared = new Map();
    for (const pusher of pushers) {
      const wait = await this.sendPending(pusher, prepared);
      if (wait !== undefined) retryIn = Math.min(retryIn ?? wait, wait);
    }
    if (retryIn !== undefined && !this.sender.stopped) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.wake();
      }, retryIn);
      this.timer.unref?.();
    }
  }

  /** Sends the pusher what it has not been sent; returns the pause before a retry when its gateway failed. */
  private async sendPending(p: PusherRow, prepared: Prepared): Promise<number | undefined> {
    const { db } = this.sender.options;
    const key = { userId: this.userId, appId: p.app_id, pushkey: p.pushkey };
    const backoffKey = `${p.app_id}\u0000${p.pushkey}`;
    let deliveredUpTo = Number(p.delivered_up_to);
    let failingSince = p.failing_since === null ? null : Number(p.failing_since);
    const waitUntil = this.notBefore.get(backoffKey);
    if (waitUntil !== undefined && waitUntil > this.sender.now()) return waitUntil - this.sender.now();
    if (deliveredUpTo < 0) {
      // Set before positions were kept: it starts with what is notified from now on.
      deliveredUpTo = this.sender.options.eventsPosition();
      await savePusherProgress(db, key, deliveredUpTo, null);
    }
    for (;;) {
      if (this.sender.stopped) return undefined;
      const rows = await notificationsAfter(db, this.userId, deliveredUpTo, BATCH);
      if (rows.length === 0) return undefined;
      for (const row of rows) {
        if (this.sender.stopped) return undefined;
        const now = this.sender.now();
        let outcome: 'sent' | 'rejected' | 'dropped';
        try {
          outcome = await this.sender.send(p, row, prepared);
        } catch (err) {
          failingSince ??= now;
          if (now - failingSince < this.sender.giveUpMs) {
            this.sender.failures++;
            const pause = Math.min(this.backoff.get(backoffKey) ?? this.sender.retry.minMs, this.sender.retry.maxMs);
            this.backoff.set(backoffKey, Math.min(pause * 2, this.sender.retry.maxMs));
            this.notBefore.set(backoffKey, now + pause);
            await savePusherProgress(db, key, deliveredUpTo, failingSince);
            this.sender.options.log.warn('push: gateway failed', { user: this.userId, app_id: p.app_id, error: String(err), retry_in_ms: pause });
            return pause;
          }
          // Failing for too long: this notification is dropped, the next tried.
          outcome = 'dropped';
        }
        if (outcome === 'rejected') {
          await deletePusher(db, this.userId, p.app_id, p.pushkey);
          this.backoff.delete(backoffKey);
          this.notBefore.delete(backoffKey);
          return undefined;
        }
        if (outcome === 'sent') failingSince = null;
        this.backoff.delete(backoffKey);
        this.notBefore.delete(backoffKey);
        deliveredUpTo = row.stream_ordering;
        await savePusherProgress(db, key, deliveredUpTo, failingSince);
        this.sender.sent++;
      }
    }
  }
}

export class PushSender {
  private readonly queues = new Map<string, UserQueue>();
  /**
   * Users with pushers: only they are woken for their notifications. Kept from the pushers at start
   * and the changes told (`pushersChanged`); one whose pushers went with a device is dropped by the
   * pass that finds none.
   */
  private readonly withPushers = new Set<string>();
  stopped = false;
  /** Notifications gateways took, and attempts that failed (metrics). */
  sent = 0;
  failures = 0;
  readonly now: () => number;
  readonly retry: { readonly minMs: number; readonly maxMs: number };
  readonly giveUpMs: number;

  constructor(readonly options: PushSenderOptions) {
    this.now = options.now ?? Date.now;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.giveUpMs = options.giveUpMs ?? GIVE_UP_MS;
  }

  /** Starts every pusher: what a stop left unsent goes now. */
  async start(): Promise<void> {
    await startNewPushers(this.options.db, this.options.eventsPosition());
    for (const p of await allPushers(this.options.db)) this.withPushers.add(p.user_id);
    this.wake(this.withPushers);
  }

  /** The user set or removed a pusher. */
  pushersChanged(userId: string): void {
    this.withPushers.add(userId);
    this.wake([userId]);
  }

  /** A pass found the user has no pushers left. */
  noPushers(userId: string): void {
    this.withPushers.delete(userId);
    this.queues.delete(userId);
  }

  /** The users have new notifications: those with pushers get them. */
  wake(userIds: Iterable<string>): void {
    for (const userId of userIds) {
      if (!this.withPushers.has(userId)) continue;
      let q = this.queues.get(userId);
      if (q === undefined) this.queues.set(userId, (q = new UserQueue(this, userId)));
      q.wake();
    }
  }

  /** Resolves when no pass is under way (tests). */
  async idle(): Promise<void> {
    for (const q of this.queues.values()) await q.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const q of this.queues.values()) q.cancel();
    await this.idle();
  }

  /** POSTs one notification to the pusher's gateway: sent, or its pushkey rejected; throws when the gateway failed. */
  async send(p: PusherRow, row: NotificationRow, prepared: Prepared = new Map()): Promise<'sent' | 'rejected'> {
    const data = JSON.parse(p.data_json) as JsonObject;
    const url = data['url'];
    if (typeof url !== 'string') return 'rejected';
    const body = await this.body(p, data, row, prepared);
    if (body === undefined) return 'sent';
    const res = await this.options.http({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status < 200 || res.status >= 300) throw new GatewayError(`gateway answered ${res.status}`);
    let rejected: unknown;
    try {
      rejected = (JSON.parse(res.body) as { rejected?: unknown }).rejected;
    } catch {
      rejected = undefined;
    }
    return Array.isArray(rejected) && rejected.includes(p.pushkey) ? 'rejected' : 'sent';
  }

  /** The notify body, or undefined when the event is gone (a purged room). */
  private async body(p: PusherRow, data: JsonObject, row: NotificationRow, prepared: Prepared): Promise<JsonObject | undefined> {
    let ready = prepared.get(row.stream_ordering);
    if (ready === undefined) prepared.set(row.stream_ordering, (ready = this.prepare(p.user_id, row)));
    const notification = await ready;
    if (notification === undefined) return undefined;
    return notifyBody(notification.event, notification.actions, { appId: p.app_id, pushkey: p.pushkey, createdTs: Number(p.created_ts), data }, notification.facts);
  }

  /** What every pusher of the user is told of a notification (read once for all of them). */
  private async prepare(userId: string, row: NotificationRow): Promise<PreparedNotification | undefined> {
    const { reader } = this.options;
    const e = (await reader.eventsByNids([row.event_nid])).get(row.event_nid);
    if (e === undefined) return undefined;
    const room = await reader.roomRow(row.room_id);
    let senderDisplayName: string | undefined;
    if (room?.state_snapshot_nid != null) {
      const member = (await reader.stateSubsetOfSnapshot(Number(room.state_snapshot_nid), 'm.room.member', [e.sender])).values().next().value;
      const name = member?.pdu.content['displayname'];
      if (typeof name === 'string') senderDisplayName = name;
    }
    const facts: NotifyFacts = {
      userId,
      senderDisplayName,
      roomName: room?.name ?? undefined,
      roomAlias: room?.canonical_alias ?? undefined,
      unread: await this.unreadRooms(userId),
    };
    // A redacted event's content is what redaction left of it.
    const content = e.redactedBy !== undefined ? {} : e.pdu.content;
    return {
      event: { eventId: e.eventId, roomId: e.roomId, type: e.type, sender: e.sender, content: isJsonObject(content) ? content : {}, stateKey: e.stateKey },
      actions: JSON.parse(row.actions_json) as PushAction[],
      facts,
    };
  }

  /** Rooms where the user has notifications after the read receipt of their thread (or an unthreaded one). */
  private async unreadRooms(userId: string): Promise<number> {
    const latest = await latestNotificationPerThread(this.options.db, userId);
    if (latest.size === 0) return 0;
    const read = await ownReadPositionsByThread(this.options.db, userId, [...latest.keys()], READ_RECEIPT_TYPES);
    let n = 0;
    for (const [roomId, threads] of latest) {
      const receipts = read.get(roomId);
      for (const [thread, position] of threads) {
        if (position > readThrough(receipts, thread)) {
          n++;
          break;
        }
      }
    }
    return n;
  }
}
