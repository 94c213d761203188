// Accounts, devices, access tokens, registration tokens and user-interactive auth sessions
// (migration 001). Booleans are 0/1 integers.

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
  /** The User-Agent header of the last request seen (migration 007). */
  last_seen_user_agent: string | null;
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

/** Tokens that allow registration (`m.login.registration_token`). */
export interface RegistrationTokensTable {
  token: string;
  /** Null: unlimited. */
  uses_allowed: number | null;
  /** Registrations completed with this token. */
  completed: number;
  /** Milliseconds since the epoch; null: never expires. */
  expiry_time: number | null;
  /** Accounts registered with it become server admins. */
  makes_admin: number;
  created_ts: number;
}

/** One user-interactive authentication session. */
export interface UiaSessionsTable {
  session_id: string;
  /** What the session authorizes (method and path); a session is not reused for another. */
  operation: string;
  /** The authenticated user the session belongs to; null for registration. */
  user_id: string | null;
  /** JSON array of the completed stage types. */
  completed: string;
  /** JSON object: request parameters and stage results kept between requests. */
  params: string;
  created_ts: number;
}

/** Named counters (numeric localparts of guests and unnamed accounts). */
export interface AccountCountersTable {
  name: string;
  value: number;
}

export interface AccountsTables {
  users: UsersTable;
  devices: DevicesTable;
  access_tokens: AccessTokensTable;
  registration_tokens: RegistrationTokensTable;
  uia_sessions: UiaSessionsTable;
  account_counters: AccountCountersTable;
}
