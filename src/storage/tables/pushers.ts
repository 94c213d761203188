// Pushers and OpenID tokens (migration 007). JSON is stored as text.

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
}
