// The key table: one record per configuration key, in file order. The loader, the generated
// configuration file and docs/CONFIG.md are all derived from it.

import { GLOBAL_IGNORED, GLOBAL_KEYS } from './keys-global.js';
import { SERVICE_IGNORED, SERVICE_KEYS } from './keys-services.js';
import type { ConfigPath, ConfigValue, IgnoredKey, KeyRecord } from './keys.js';

const ALL_KEYS = [...GLOBAL_KEYS, ...SERVICE_KEYS];

// Fails to compile, naming the paths, when a HearthConfig property has no key record.
type Missing = Exclude<ConfigPath, (typeof ALL_KEYS)[number]['path']>;
const everyPropertyHasAKey: [Missing] extends [never] ? true : Missing = true;
void everyPropertyHasAKey;

export const KEYS: readonly KeyRecord[] = ALL_KEYS;
export const IGNORED_KEYS: readonly IgnoredKey[] = [...GLOBAL_IGNORED, ...SERVICE_IGNORED];

/** What each section is for, by section path; the generated file and the docs print these. */
export const SECTIONS: Readonly<Record<string, string>> = {
  global: 'Settings shared by every part of the server.',
  'global.database': 'The database. SQLite by default; PostgreSQL for larger or multi-process deployments.',
  'global.cache': 'In-memory caches of frequently read data (events, identifiers and the like).',
  'global.jetstream': 'The internal message bus that tells the parts of the server that data changed.',
  'global.metrics': 'Prometheus metrics.',
  'global.metrics.basic_auth': 'Credentials protecting `/metrics`.',
  'global.presence': 'Presence (online status) exchanged with other servers.',
  listen: 'Where the server listens. Client, federation and operator endpoints share these listeners.',
  client_api: 'The client-server API.',
  'client_api.rate_limiting':
    'Request rate limits, after Synapse\'s `rc_*` settings. Each limit is a bucket per user (per client ' +
    'address for logins and registrations) that holds `burst_count` actions and empties at ' +
    '`per_second`; a request that finds its bucket full gets 429 M_LIMIT_EXCEEDED with ' +
    '`retry_after_ms` and a Retry-After header. Only the requests named below count: syncs, ' +
    'to-device messages, keys, receipts, read markers, typing, account data, presence and profile ' +
    'reads are never limited. Server admins are exempt.',
  'client_api.rate_limiting.message':
    'Room events a user sends: messages, state events and redactions (Synapse\'s `rc_message`). ' +
    'Failed sends do not count.',
  'client_api.rate_limiting.room_creation': 'Rooms a user creates (Synapse\'s `rc_room_creation`).',
  'client_api.rate_limiting.joins': 'Rooms a user joins (Synapse\'s `rc_joins.local`).',
  'client_api.rate_limiting.invites': 'Invites a user sends (Synapse\'s `rc_invites.per_issuer`).',
  'client_api.rate_limiting.login': 'Logins (Synapse\'s `rc_login`).',
  'client_api.rate_limiting.login.address':
    'Login attempts from one client address, successful or not. A household or office behind one ' +
    'address shares this bucket, so its burst is 20 where Synapse\'s is 5.',
  'client_api.rate_limiting.login.account': 'Successful logins to one account (each makes a device).',
  'client_api.rate_limiting.login.failed_attempts':
    'Failed login attempts (wrong password, unknown user) against one account, which slow down password guessing.',
  'client_api.rate_limiting.registration': 'Completed registrations from one client address (Synapse\'s `rc_registration`).',
  'client_api.rate_limiting.registration_token_validity':
    'Registration-token validity checks from one client address, which slow down token guessing ' +
    '(Synapse\'s `rc_registration_token_validity`).',
  'client_api.rate_limiting.media_create':
    'Media a user uploads (`POST /upload`, `PUT /upload/{serverName}/{mediaId}`) and ids made with ' +
    '`POST /v1/create`, every attempt counted (Synapse\'s `rc_media_create`).',
  user_api: 'Accounts and passwords.',
  media_api: 'Media uploads, downloads and thumbnails.',
  'media_api.url_preview':
    'URL previews: the title, description and image of a page a user links to, fetched by the server ' +
    '(`GET /_chat/client/v1/media/preview_url`, also `/_chat/media/v3/preview_url`). Each preview ' +
    'is kept for an hour.',
  room_server: 'Rooms this server creates.',
  sync_api: 'Sync and search.',
  'sync_api.search': 'Full-text search.',
  federation_api: 'Federation with other servers.',
  app_service_api: 'Application services (bridges and bots).',
};

const BY_PATH: ReadonlyMap<string, KeyRecord> = new Map(KEYS.map((k) => [k.path, k]));
const BY_ALIAS: ReadonlyMap<string, KeyRecord> = new Map(
  KEYS.flatMap((k) => (k.aliases ?? []).map((alias) => [alias, k] as const)),
);

/** The record of a key, by its path or one of its aliases. */
export function findKey(path: string): KeyRecord | undefined {
  return BY_PATH.get(path) ?? BY_ALIAS.get(path);
}

export function isIgnoredKey(path: string): boolean {
  return ignoredKey(path) !== undefined;
}

export function ignoredKey(path: string): IgnoredKey | undefined {
  return IGNORED_KEYS.find((k) => k.path === path);
}

/** Every section path (a proper prefix of some key path, alias or ignored key). */
export const SECTION_PATHS: ReadonlySet<string> = new Set(
  [...KEYS.flatMap((k) => [k.path, ...(k.aliases ?? [])]), ...IGNORED_KEYS.map((k) => k.path)].flatMap((p) => {
    const parts = p.split('.');
    return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

/** Reads a parsed value; undefined when that key failed to parse. */
export type ValueReader = <P extends ConfigPath>(path: P) => ConfigValue<P> | undefined;

export interface CrossCheck {
  readonly doc: string;
  check(get: ValueReader, error: (path: string, message: string) => void): void;
}

/** Rules between keys, applied after each key is parsed on its own. */
export const CROSS_CHECKS: readonly CrossCheck[] = [
  {
    doc: '`listen.https` needs `listen.tls_cert` and `listen.tls_key`.',
    check(get, error) {
      if (get('listen.https') === null || get('listen.https') === undefined) return;
      if (get('listen.tls_cert') === null) error('listen.tls_cert', 'is required when listen.https is set');
      if (get('listen.tls_key') === null) error('listen.tls_key', 'is required when listen.https is set');
    },
  },
  {
    doc: '`listen.tls_cert` and `listen.tls_key` go together.',
    check(get, error) {
      if (get('listen.https') !== null) return; // the rule above covers it
      const cert = get('listen.tls_cert');
      const key = get('listen.tls_key');
      if (cert === undefined || key === undefined || (cert === null) === (key === null)) return;
      const [missing, present] = cert === null ? ['listen.tls_cert', 'listen.tls_key'] : ['listen.tls_key', 'listen.tls_cert'];
      error(missing, `is required when ${present} is set`);
    },
  },
  {
    doc: 'The `/metrics` user name and password go together.',
    check(get, error) {
      const user = get('global.metrics.basic_auth.username');
      const password = get('global.metrics.basic_auth.password');
      if (user === undefined || password === undefined || (user === null) === (password === null)) return;
      if (user === null) error('global.metrics.basic_auth.username', 'is required when the password is set');
      else error('global.metrics.basic_auth.password', 'is required when the user name is set');
    },
  },
];
