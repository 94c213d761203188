// Accounts, devices and access tokens (migration 001). Booleans are 0/1 integers.

import type { Generated } from 'kysely';

export interface UsersTable {
  user_id: string;
  localpart: string;
  password_hash: string | null;
  is_admin: number;
  is_guest: number;
  deactivated: number;
  appservice_id: string | null;
  created_ts: number;
}

export interface DevicesTable {
  user_id: string;
  device_id: string;
  display_name: string | null;
  created_ts: number;
  last_seen_ts: number | null;
  last_seen_ip: string | null;
}

export interface AccessTokensTable {
  /** SHA-256 of the token: a copy of the database does not hand out sessions. */
  token_hash: string;
  token_id: Generated<number>;
  user_id: string;
  device_id: string;
  created_ts: number;
  valid_until_ts: number | null;
}

export interface AccountsTables {
  users: UsersTable;
  devices: DevicesTable;
  access_tokens: AccessTokensTable;
}
