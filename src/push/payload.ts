// The push gateway's notify body (push gateway API, POST /_matrix/push/v1/notify): one event for
// one of the user's devices. A pusher whose data says `format: "event_id_only"` gets only the ids,
// the counts and the priority: the rest is fetched by the app, so nothing of the message passes
// through the gateway.

import type { JsonObject } from '../protocol/json.js';
import { summarizeActions, type PushAction } from '../protocol/push-rules/index.js';

export interface NotifyEvent {
  readonly eventId: string;
  readonly roomId: string;
  readonly type: string;
  readonly sender: string;
  readonly content: JsonObject;
  readonly stateKey: string | undefined;
}

export interface NotifyDevice {
  readonly appId: string;
  readonly pushkey: string;
  /** When the pusher was set, in ms. */
  readonly createdTs: number;
  /** The pusher's data. */
  readonly data: JsonObject;
}

export interface NotifyFacts {
  /** Whom the notification is for. */
  readonly userId: string;
  readonly senderDisplayName: string | undefined;
  readonly roomName: string | undefined;
  readonly roomAlias: string | undefined;
  /** Rooms with unread notifications (the app's badge). */
  readonly unread: number;
}

export function notifyBody(event: NotifyEvent, actions: readonly PushAction[], device: NotifyDevice, facts: NotifyFacts): JsonObject {
  const { tweaks } = summarizeActions(actions);
  // Encrypted events may be anything, so they wake the device as a highlight or a sound would.
  const prio = event.type === 'm.room.encrypted' || tweaks['highlight'] === true || tweaks['sound'] !== undefined ? 'high' : 'low';
  // The url is where the body goes; the gateway is not told it again.
  const { url: _url, ...data } = device.data;
  const devices = [{ app_id: device.appId, pushkey: device.pushkey, pushkey_ts: Math.floor(device.createdTs / 1000), data, tweaks }];
  const counts = { unread: facts.unread };
  if (device.data['format'] === 'event_id_only') {
    return { notification: { event_id: event.eventId, room_id: event.roomId, counts, devices, prio } };
  }
  const notification: JsonObject = {
    event_id: event.eventId,
    room_id: event.roomId,
    type: event.type,
    sender: event.sender,
    content: event.content,
    counts,
    devices,
    prio,
  };
  if (facts.senderDisplayName !== undefined) notification['sender_display_name'] = facts.senderDisplayName;
  if (facts.roomName !== undefined) notification['room_name'] = facts.roomName;
  if (facts.roomAlias !== undefined) notification['room_alias'] = facts.roomAlias;
  if (event.type === 'm.room.member' && event.stateKey !== undefined) {
    notification['membership'] = event.content['membership'] ?? null;
    notification['user_is_target'] = event.stateKey === facts.userId;
  }
  return { notification };
}
