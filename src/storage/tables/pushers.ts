// Pushers and OpenID tokens (migration 007), push notifications (022). JSON is stored as text.

import type { Generated } from 'kysely';

export interface PushersTable {
  user_id: string;
  app_id: string;
  pushkey: string;
  /** 'http'. */
  kind: string;
  app_display_name: string;
  device_display_name: string;
  /** '' when the client gave none. */
  profile_tag: string;
  lang: string;
  /** The pusher's `data` object (url, format, ...). */
  data_json: string;
  /** The device that set the pusher: deleting it deletes the pusher. Null for tokens without a device. */
  device_id: string | null;
  created_ts: number;
  /** Notifications up to this stream position were sent (or given up on); -1: not started yet. */
  delivered_up_to: Generated<number>;
  /** When the gateway started failing, while it does. */
  failing_since: number | null;
}

/** One event that notifies one local user: what their push rules decided (migration 022). */
export interface PushNotificationsTable {
  user_id: string;
  /** The event's stream position. */
  stream_ordering: number;
  room_id: string;
  event_nid: number;
  /** The matching rule's actions (tweaks included). */
  actions_json: string;
  /** 1 when the actions highlight. */
  highlight: number;
  received_ts: number;
  /** The event's thread: its root's event id, or 'main' for the main timeline (migration 024). */
  thread_id: string;
}

/** Tokens a user hands to a third party to prove who they are (federation openid/userinfo). */
export interface OpenIdTokensTable {
  /** SHA-256 of the token, as for access tokens. */
  token_hash: string;
  user_id: string;
  valid_until_ts: number;
}

export interface PusherTables {
  pushers: PushersTable;
  openid_tokens: OpenIdTokensTable;
  push_notifications: PushNotificationsTable;
}
