// Ephemeral news of this server's users to the other servers in their rooms: typing (m.typing),
// public read receipts (m.receipt) and presence (m.presence, to every server sharing a room with
// the user). Sent at once, each in a transaction of its own, and not kept: a server that misses
// one gets the next (typing times out by itself; a later receipt replaces an earlier one; presence
// is repeated while the user is not offline). Other servers' users are never echoed back. What
// must not be lost goes through the durable queue instead (edu-outbox.ts).

import type { Kysely } from 'kysely';
import { isUserOf } from '../protocol/ids/user-id.js';
import type { JsonObject } from '../protocol/json.js';
import { joinedServersOf, serversSharingRoomsWith } from '../storage/federation/room-servers.js';
import type { Schema } from '../storage/schema.js';
import type { PresenceContent } from '../users/presence.js';
import type { FederationRequest, FederationResponse } from './client.js';

export interface EduSenderOptions {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly client: { request(req: FederationRequest): Promise<FederationResponse> };
  readonly log: { warn(message: string, details?: object): void };
  readonly now?: () => number;
}

/** EDUs are news of the moment: a peer that takes longer than this misses it. */
const EDU_TIMEOUT_MS = 10_000;

export class EduSender {
  private sent = 0;
  private readonly now: () => number;

  constructor(private readonly options: EduSenderOptions) {
    this.now = options.now ?? Date.now;
  }

  typing(userId: string, roomId: string, typing: boolean): void {
    if (!isUserOf(userId, this.options.serverName)) return;
    void this.toRoom(roomId, { edu_type: 'm.typing', content: { room_id: roomId, user_id: userId, typing } });
  }

  receipt(r: { userId: string; roomId: string; receiptType: string; eventId: string; threadId: string; ts: number }): void {
    if (!isUserOf(r.userId, this.options.serverName)) return;
    const data: JsonObject = { ts: r.ts, ...(r.threadId !== '' ? { thread_id: r.threadId } : {}) };
    const content = { [r.roomId]: { [r.receiptType]: { [r.userId]: { event_ids: [r.eventId], data } } } };
    void this.toRoom(r.roomId, { edu_type: 'm.receipt', content });
  }

  presence(userId: string, content: PresenceContent): void {
    if (!isUserOf(userId, this.options.serverName)) return;
    const update: JsonObject = {
      user_id: userId,
      presence: content.presence,
      last_active_ago: content.last_active_ago ?? 0,
      currently_active: content.currently_active ?? false,
      ...(content.status_msg !== undefined ? { status_msg: content.status_msg } : {}),
    };
    void this.toServers(() => serversSharingRoomsWith(this.options.db, userId), { edu_type: 'm.presence', content: { push: [update] } });
  }

  private toRoom(roomId: string, edu: JsonObject): Promise<void> {
    return this.toServers(() => joinedServersOf(this.options.db, roomId), edu, { roomId });
  }

  private async toServers(list: () => Promise<string[]>, edu: JsonObject, details: object = {}): Promise<void> {
    let servers: string[];
    try {
      servers = (await list()).filter((s) => s !== this.options.serverName);
    } catch (err) {
      this.options.log.warn('could not list the servers for an EDU', { ...details, type: edu['edu_type'], error: String(err) });
      return;
    }
    await Promise.all(servers.map((destination) => this.send(destination, edu)));
  }

  private async send(destination: string, edu: JsonObject): Promise<void> {
    // Unique per destination: an `e` keeps them apart from the PDU queues' position ranges.
    const txnId = `e${this.now()}.${this.sent++}`;
    try {
      const res = await this.options.client.request({
        destination,
        method: 'PUT',
        path: `/federation/v1/send/${txnId}`,
        body: { origin: this.options.serverName, origin_server_ts: this.now(), pdus: [], edus: [edu] },
        timeoutMs: EDU_TIMEOUT_MS,
      });
      if (res.status !== 200) this.options.log.warn('an EDU was refused', { destination, type: edu['edu_type'], status: res.status });
    } catch (err) {
      this.options.log.warn('an EDU could not be sent', { destination, type: edu['edu_type'], error: String(err) });
    }
  }
}
