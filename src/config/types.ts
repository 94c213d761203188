// The loaded configuration: every key present, defaults filled in, paths absolute, durations in
// milliseconds, sizes in bytes. Property names follow the YAML keys so a key path names a property.

import type { HostPort } from './net.js';

export type ProtocolName = 'chat' | 'matrix';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type ThumbnailMethod = 'crop' | 'scale';

export interface ThumbnailSize {
  width: number;
  height: number;
  method: ThumbnailMethod;
}

export interface PerspectiveKey {
  /** `ed25519:<name>` */
  key_id: string;
  /** unpadded standard base64 of the 32-byte public key */
  public_key: string;
}

export interface KeyPerspective {
  server_name: string;
  keys: PerspectiveKey[];
}

/** One rate limit: a bucket per user (or address, or account) holding `burst_count` actions, draining at `per_second`. */
export interface RateLimit {
  per_second: number;
  burst_count: number;
}

/** An entry of url_preview.url_blacklist: the URL parts it names (globs or ^regexes); null: any. */
export interface UrlPattern {
  scheme: string | null;
  netloc: string | null;
  path: string | null;
  query: string | null;
}

export interface LogTarget {
  type: 'std' | 'file';
  level: LogLevel;
  /** Folder for `file` targets (absolute); null for `std`. */
  path: string | null;
}

export interface HearthConfig {
  version: number;
  global: {
    server_name: string;
    /** absolute path of the Ed25519 signing key file */
    private_key: string;
    /** milliseconds */
    key_validity_period: number;
    well_known_server_name: string | null;
    /** base URL served as the client well-known `m.homeserver` */
    well_known_client_name: string | null;
    /** absolute path */
    data_dir: string;
    database: {
      /** `file:<absolute path>` for SQLite or a `postgres://` URL; see parseConnectionString() */
      connection_string: string;
      max_open_conns: number;
      max_idle_conns: number;
      /** seconds; -1 or 0 = unbounded */
      conn_max_lifetime: number;
    };
    cache: {
      /** bytes */
      max_size_estimated: number;
      /** milliseconds */
      max_age: number;
    };
    disable_federation: boolean;
    protocol_name: ProtocolName;
    jetstream: {
      /** empty: the in-process bus */
      addresses: string[];
      in_memory: boolean;
      topic_prefix: string;
      /** absolute path */
      storage_path: string;
      disable_tls_validation: boolean;
    };
    metrics: {
      enabled: boolean;
      basic_auth: {
        username: string | null;
        password: string | null;
      };
    };
    presence: {
      enable_inbound: boolean;
      enable_outbound: boolean;
    };
    trusted_third_party_id_servers: string[];
    /** addresses and CIDR ranges as `address/prefix` */
    trusted_proxies: string[];
  };
  listen: {
    /** null: no plain-HTTP listener */
    http: HostPort | null;
    /** null: no TLS listener */
    https: HostPort | null;
    tls_cert: string | null;
    tls_key: string | null;
  };
  client_api: {
    registration_disabled: boolean;
    guests_disabled: boolean;
    /** null: shared-secret registration is off */
    registration_shared_secret: string | null;
    registration_requires_token: boolean;
    rate_limiting: {
      enabled: boolean;
      exempt_user_ids: string[];
      message: RateLimit;
      room_creation: RateLimit;
      joins: RateLimit;
      invites: RateLimit;
      login: {
        address: RateLimit;
        account: RateLimit;
        failed_attempts: RateLimit;
      };
      registration: RateLimit;
      registration_token_validity: RateLimit;
      media_create: RateLimit;
    };
  };
  user_api: {
    bcrypt_cost: number;
  };
  media_api: {
    /** absolute path */
    base_path: string;
    /** bytes; 0 = unlimited */
    max_file_size_bytes: number;
    max_pending_uploads: number;
    dynamic_thumbnails: boolean;
    max_thumbnail_generators: number;
    thumbnail_sizes: ThumbnailSize[];
    url_preview: {
      enabled: boolean;
      /** addresses and CIDR ranges as `address/prefix` */
      ip_range_blacklist: string[];
      ip_range_whitelist: string[];
      url_blacklist: UrlPattern[];
      /** bytes */
      max_spider_size: number;
      /** milliseconds */
      timeout: number;
    };
  };
  room_server: {
    /** the version of rooms created without one */
    default_room_version: string;
  };
  sync_api: {
    search: {
      enabled: boolean;
      language: string;
    };
  };
  federation_api: {
    send_max_retries: number;
    disable_tls_validation: boolean;
    prefer_direct_fetch: boolean;
    key_perspectives: KeyPerspective[];
  };
  app_service_api: {
    disable_tls_validation: boolean;
    legacy_authorization: boolean;
  };
  /** absolute paths of appservice registration files */
  app_service_config_files: string[];
  logging: LogTarget[];
}
