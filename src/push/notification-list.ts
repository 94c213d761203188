// GET /notifications (client API, "Listing notifications"): the events that notified the user,
// newest first, with the actions their push rules gave them and whether the user has read them
// (their unthreaded read receipt in the room, or the one for the event's thread, is at or past it). `from` is the position to continue
// before, as the previous page's `next_token` gave it.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { JsonValue } from '../protocol/json.js';
import type { ClientEvent } from '../rooms/client-event.js';
import type { RoomReader } from '../rooms/reader.js';
import { notificationsBefore } from '../storage/push/notifications.js';
import type { Schema } from '../storage/schema.js';
import { ownReadPositionsByThread, READ_RECEIPT_TYPES, readThrough } from '../storage/sync/memberships.js';


export interface NotificationJson {
  actions: JsonValue[];
  event: ClientEvent;
  read: boolean;
  room_id: string;
  ts: number;
}

export interface NotificationPage {
  notifications: NotificationJson[];
  next_token?: string;
}

export async function listNotifications(
  deps: { readonly db: Kysely<Schema>; readonly reader: RoomReader; readonly now: () => number },
  viewer: { readonly userId: string; readonly deviceId: string | null },
  options: { readonly from: string | undefined; readonly limit: number; readonly onlyHighlight: boolean },
): Promise<NotificationPage> {
  let before: number | undefined;
  if (options.from !== undefined) {
    if (!/^\d{1,15}$/.test(options.from)) throw HearthError.invalidParam('from is not a token this server gave');
    before = Number(options.from);
  }
  const rows = await notificationsBefore(deps.db, viewer.userId, { before, limit: options.limit, onlyHighlight: options.onlyHighlight });
  const events = await deps.reader.eventsByNids(rows.map((r) => r.event_nid));
  const read = await ownReadPositionsByThread(deps.db, viewer.userId, [...new Set(rows.map((r) => r.room_id))], READ_RECEIPT_TYPES);
  const notifications: NotificationJson[] = [];
  const kept = rows.filter((r) => events.has(r.event_nid));
  const served = await deps.reader.clientEvents(kept.map((r) => events.get(r.event_nid)!), { now: deps.now(), viewer });
  kept.forEach((r, i) => {
    notifications.push({
      actions: JSON.parse(r.actions_json) as JsonValue[],
      event: served[i]!,
      read: readThrough(read.get(r.room_id), r.thread_id) >= r.stream_ordering,
      room_id: r.room_id,
      ts: r.received_ts,
    });
  });
  const page: NotificationPage = { notifications };
  if (rows.length === options.limit && rows.length > 0) page.next_token = String(rows[rows.length - 1]!.stream_ordering);
  return page;
}
