// What the admin API keeps about accounts beyond the accounts tables (migration 020): third-party
// identifiers, identities at external providers, the account type and per-user rate limits.

/** A user's third-party identifier (email, msisdn), unique per medium and address. */
export interface UserThreepidsTable {
  user_id: string;
  medium: string;
  address: string;
  validated_at: number;
  added_at: number;
}

/** The user's identity at an external authentication provider, unique per provider. */
export interface UserExternalIdsTable {
  auth_provider: string;
  external_id: string;
  user_id: string;
}

/** The account's type (`bot`, `support`, ...); users without a row have none. */
export interface UserTypesTable {
  user_id: string;
  user_type: string;
}

/** Message rate limits for one user in place of the configured ones; 0 and 0 exempts the user. */
export interface RatelimitOverridesTable {
  user_id: string;
  messages_per_second: number;
  burst_count: number;
}

export interface AdminUsersTables {
  user_threepids: UserThreepidsTable;
  user_external_ids: UserExternalIdsTable;
  user_types: UserTypesTable;
  ratelimit_overrides: RatelimitOverridesTable;
}
