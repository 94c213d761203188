// Key records of the per-service sections (`client_api`, `user_api`, `media_api`, `room_server`,
// `sync_api`, `federation_api`, `app_service_api`) and of `logging`.

import { join, resolve } from 'node:path';
import { DEFAULT_ROOM_VERSION, roomVersions } from '../protocol/room-versions.js';
import { type IgnoredKey, key } from './keys.js';
import {
  INVALID,
  type Kind,
  addressRange,
  boolean,
  describe,
  duration,
  integer,
  isMapping,
  list,
  oneOf,
  orNone,
  versionOf,
  path,
  record,
  serverName,
  size,
  string,
  userId,
} from './kinds.js';
import type { LogTarget, PerspectiveKey, UrlPattern } from './types.js';

const perspectiveKey = record<PerspectiveKey>('key', {
  key_id: { kind: string(/^ed25519:[A-Za-z0-9_]+$/, 'must be ed25519:<name>') },
  public_key: {
    kind: string(/^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=?$/, 'must be the unpadded base64 of a 32-byte key'),
  },
});

/** A number above zero; rates may be fractions, as in Synapse's 0.003. */
const positiveNumber: Kind<number> = {
  label: 'number > 0',
  parse(raw, at, ctx) {
    if (typeof raw === 'number' && Number.isFinite(raw) && raw > 0) return raw;
    ctx.error(at, `must be a number above 0, got ${describe(raw)}`);
    return INVALID;
  },
};

type RateLimitPath =
  | 'message'
  | 'room_creation'
  | 'joins'
  | 'invites'
  | 'login.address'
  | 'login.account'
  | 'login.failed_attempts'
  | 'registration'
  | 'registration_token_validity'
  | 'media_create';

/** The two keys of one rate limit, `client_api.rate_limiting.<name>.per_second` and `.burst_count`. */
function rateLimitKeys(name: RateLimitPath, perSecond: number, burstCount: number, docs: { per_second: string; burst_count: string }) {
  return [
    key({ path: `client_api.rate_limiting.${name}.per_second`, kind: positiveNumber, default: perSecond, doc: docs.per_second }),
    key({ path: `client_api.rate_limiting.${name}.burst_count`, kind: integer(1), default: burstCount, doc: docs.burst_count }),
  ];
}

/** A glob (`*`, `?`) or, starting with `^`, a regular expression. */
const urlPart: Kind<string> = {
  label: 'glob or ^regex',
  parse(raw, at, ctx) {
    if (typeof raw === 'string' && raw !== '') {
      if (!raw.startsWith('^')) return raw;
      try {
        new RegExp(raw);
        return raw;
      } catch {
        // reported below
      }
    }
    ctx.error(at, `must be a glob pattern or a regular expression starting with ^, got ${describe(raw)}`);
    return INVALID;
  },
};

const urlPattern = record<UrlPattern>('URL pattern', {
  scheme: { kind: orNone(urlPart), default: '' },
  netloc: { kind: orNone(urlPart), default: '' },
  path: { kind: orNone(urlPart), default: '' },
  query: { kind: orNone(urlPart), default: '' },
});

/** Synapse's recommended url_preview_ip_range_blacklist, and the reserved 0/8 and 240/4: every range that is not the public internet. */
const PRIVATE_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  'fe80::/10',
  'fc00::/7',
  '2001:db8::/32',
  'ff00::/8',
  'fec0::/10',
];

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

const logTargetShape = record('log target', {
  type: { kind: oneOf(['std', 'file']) },
  level: { kind: oneOf(LOG_LEVELS), default: 'info' },
  params: { kind: { label: 'mapping', parse: (p: unknown) => p }, default: {} },
});

/** `{type: std|file, level, params: {path}}`; a file target writes into params.path (a folder), by default <data_dir>/logs. */
const logTarget: Kind<LogTarget> = {
  label: 'log target',
  parse(raw, at, ctx) {
    const shape = logTargetShape.parse(raw, at, ctx);
    if (shape === INVALID) return INVALID;
    const params: unknown = shape.params;
    if (!isMapping(params)) {
      ctx.error(`${at}.params`, 'must be a mapping');
      return INVALID;
    }
    for (const name of Object.keys(params)) {
      if (name !== 'path') ctx.warn(`${at}.params.${name}`, 'unknown key, ignored');
    }
    if (shape.type === 'std') return { type: 'std', level: shape.level, path: null };
    const folder = params['path'] ?? (ctx.dataDir === undefined ? undefined : join(ctx.dataDir, 'logs'));
    if (typeof folder !== 'string' || folder === '') {
      ctx.error(`${at}.params.path`, `must be a folder for the log files, got ${describe(folder)}`);
      return INVALID;
    }
    return { type: 'file', level: shape.level, path: resolve(ctx.baseDir, folder) };
  },
};

export const SERVICE_KEYS = [
  key({
    path: 'client_api.registration_disabled',
    kind: boolean,
    default: true,
    doc: 'Refuse open registration; accounts are then made through shared-secret registration or the admin API.',
  }),
  key({
    path: 'client_api.guests_disabled',
    kind: boolean,
    default: true,
    doc: 'Refuse guest accounts.',
  }),
  key({
    path: 'client_api.registration_shared_secret',
    kind: orNone(string()),
    default: '',
    doc:
      'Secret that allows registration through `/_ext/admin/v1/register` (also `/_synapse/admin/v1/register`) ' +
      'even when registration is disabled. Empty: shared-secret registration is off.',
  }),
  key({
    path: 'client_api.registration_requires_token',
    kind: boolean,
    default: false,
    doc: 'Open registration also requires a registration token.',
  }),
  key({
    path: 'client_api.rate_limiting.enabled',
    kind: boolean,
    default: true,
    doc: 'Apply the rate limits below; false turns every one of them off.',
  }),
  key({
    path: 'client_api.rate_limiting.exempt_user_ids',
    kind: list(userId),
    default: [],
    doc:
      'Users never rate limited, besides server admins and the users of appservices whose ' +
      'registration says `rate_limited: false`.',
    example: ['@bot:example.org'],
  }),
  ...rateLimitKeys('message', 1, 100, {
    per_second:
      'Room events per second a user may send once the burst is used up; Synapse allows 0.2. One a ' +
      'second is more than anyone types and still holds a runaway client or bot in check.',
    burst_count:
      'Room events a user may send at once before being limited. Synapse\'s 10 refuses real ' +
      'clients: an end-to-end encrypted client sends what the user queued (pasted lines, ' +
      'forwarded messages, an outbox after a reconnection) as fast as it can, and 50 messages at ' +
      'full speed must all go through; 100 leaves room for that and for a moderator redacting a ' +
      'wave of spam.',
  }),
  ...rateLimitKeys('room_creation', 0.016, 10, {
    per_second: 'Rooms per second a user may create once the burst is used up (about one a minute, as Synapse).',
    burst_count: 'Rooms a user may create at once before being limited (as Synapse).',
  }),
  ...rateLimitKeys('joins', 0.1, 10, {
    per_second: 'Joins per second a user may make once the burst is used up (as Synapse).',
    burst_count: 'Rooms a user may join at once before being limited (as Synapse).',
  }),
  ...rateLimitKeys('invites', 0.3, 10, {
    per_second: 'Invites per second a user may send once the burst is used up (as Synapse).',
    burst_count: 'Invites a user may send at once before being limited (as Synapse).',
  }),
  ...rateLimitKeys('login.address', 0.05, 20, {
    per_second: 'Login attempts per second from one address once the burst is used up (one every 20 s; Synapse: 0.003).',
    burst_count:
      'Login attempts from one address at once before it is limited. Behind a reverse proxy, set ' +
      '`global.trusted_proxies`, or every user shares the proxy\'s address.',
  }),
  ...rateLimitKeys('login.account', 0.003, 5, {
    per_second: 'Successful logins per second to one account once the burst is used up (as Synapse).',
    burst_count: 'Successful logins to one account at once before it is limited (as Synapse).',
  }),
  ...rateLimitKeys('login.failed_attempts', 0.17, 3, {
    per_second: 'Failed logins per second against one account once the burst is used up (as Synapse).',
    burst_count: 'Failed logins against one account before further attempts are refused for a while (as Synapse).',
  }),
  ...rateLimitKeys('registration', 0.17, 3, {
    per_second: 'Registrations per second from one address once the burst is used up (as Synapse).',
    burst_count:
      'Registrations from one address at once before it is limited (as Synapse); the steps of ' +
      'user-interactive authentication before the account is made do not count.',
  }),
  ...rateLimitKeys('registration_token_validity', 0.1, 5, {
    per_second: 'Registration-token checks per second from one address once the burst is used up (as Synapse).',
    burst_count: 'Registration-token checks from one address at once before it is limited (as Synapse).',
  }),
  ...rateLimitKeys('media_create', 10, 50, {
    per_second: 'Uploads and `/create` calls per second a user may make once the burst is used up (as Synapse).',
    burst_count: 'Uploads and `/create` calls a user may make at once before being limited (as Synapse).',
  }),
  key({
    path: 'user_api.bcrypt_cost',
    kind: integer(4, 31),
    default: 10,
    doc: 'bcrypt cost of password hashes; each step up doubles the CPU time of registration and login.',
  }),
  key({
    path: 'media_api.base_path',
    kind: path,
    default: { underDataDir: 'media' },
    doc: 'Folder where uploaded and fetched media and their thumbnails are kept.',
  }),
  key({
    path: 'media_api.max_file_size_bytes',
    kind: size(),
    default: 52428800,
    doc:
      'Largest upload accepted, in bytes or with a size suffix; 0 means no limit. A reverse proxy ' +
      'in front must accept request bodies at least this large.',
  }),
  key({
    path: 'media_api.max_pending_uploads',
    kind: integer(1),
    default: 5,
    doc:
      'Media ids a user may hold made with `POST /_chat/media/v1/create` and not yet uploaded to; ' +
      'one more is 429 M_LIMIT_EXCEEDED (Synapse\'s `max_pending_media_uploads`). An unused id ' +
      'expires after 24 hours.',
  }),
  key({
    path: 'media_api.dynamic_thumbnails',
    kind: boolean,
    default: true,
    doc: 'Make thumbnails on request when no stored size fits, instead of only the configured sizes.',
  }),
  key({
    path: 'media_api.max_thumbnail_generators',
    kind: integer(1),
    default: 10,
    doc: 'Thumbnails generated at the same time, at most.',
  }),
  key({
    path: 'media_api.thumbnail_sizes',
    kind: list(
      record('thumbnail size', {
        width: { kind: integer(1) },
        height: { kind: integer(1) },
        method: { kind: oneOf(['crop', 'scale']) },
      }),
    ),
    default: [
      { width: 32, height: 32, method: 'crop' },
      { width: 96, height: 96, method: 'crop' },
      { width: 640, height: 480, method: 'scale' },
    ],
    doc:
      'Thumbnails made for each uploaded image: width and height in pixels, method `crop` (fill ' +
      'the box, cutting off edges) or `scale` (fit inside the box).',
  }),
  key({
    path: 'media_api.url_preview.enabled',
    kind: boolean,
    default: false,
    doc:
      'Serve URL previews (`preview_url`): the server fetches the pages users link to. Off, the ' +
      'endpoint is not served (404 M_UNRECOGNIZED, as Synapse). Before turning it on, check that the ' +
      'blacklist below covers every address of your own network.',
  }),
  key({
    path: 'media_api.url_preview.ip_range_blacklist',
    kind: list(addressRange),
    default: PRIVATE_RANGES,
    doc:
      'Addresses never fetched for a preview: a host any of whose addresses lies in one of these ' +
      'ranges is refused (403); an IPv4 address written as IPv6 (`::ffff:10.0.0.1`) is judged as ' +
      'IPv4. The default is Synapse\'s recommended list (loopback, private, link-local, ' +
      'carrier-grade NAT, documentation, multicast, IPv6 unique-local and site-local) with ' +
      '`0.0.0.0/8` and `240.0.0.0/4` besides. `0.0.0.0` and `::` are always refused.',
  }),
  key({
    path: 'media_api.url_preview.ip_range_whitelist',
    kind: list(addressRange),
    default: [],
    doc: 'Addresses fetched even though the blacklist covers them (an intranet wiki, say).',
    example: ['192.168.1.10'],
  }),
  key({
    path: 'media_api.url_preview.url_blacklist',
    kind: list(urlPattern),
    default: [],
    doc:
      'URLs never previewed (403): each entry names parts of the URL, `scheme`, `netloc` (host and ' +
      'port), `path` and `query`, as glob patterns (`*`, `?`) or, starting with `^`, regular ' +
      'expressions; a URL is refused when every part an entry names matches. As Synapse\'s ' +
      '`url_preview_url_blacklist`, with fewer parts.',
    example: [{ netloc: 'google.com' }, { netloc: '*.google.com' }, { scheme: 'http' }, { netloc: 'www.acme.com', path: '/foo' }],
  }),
  key({
    path: 'media_api.url_preview.max_spider_size',
    kind: size(1),
    default: '10mb',
    doc: 'Largest page or image fetched for a preview; a larger one fails the preview (502).',
  }),
  key({
    path: 'media_api.url_preview.timeout',
    kind: duration(1),
    default: '10s',
    doc: 'How long fetching one URL of a preview (each redirect, the image) may take.',
  }),
  key({
    path: 'room_server.default_room_version',
    kind: versionOf(Object.keys(roomVersions)),
    default: DEFAULT_ROOM_VERSION,
    doc: 'Room version of rooms created without one (`room_version` of /createRoom), as /capabilities names it.',
  }),
  key({
    path: 'sync_api.search.enabled',
    kind: boolean,
    default: true,
    doc: 'Full-text search of messages.',
  }),
  key({
    path: 'sync_api.search.language',
    kind: string(/^[a-z]{2,3}$/, 'must be a language code such as "en"'),
    default: 'en',
    doc: 'Language of most messages (ISO 639 code), used to stem words in the search index.',
  }),
  key({
    path: 'federation_api.send_max_retries',
    kind: integer(0),
    default: 16,
    doc:
      'Failed deliveries to a server before it is given up on until it is heard from again; the ' +
      'wait doubles after each failure.',
  }),
  key({
    path: 'federation_api.disable_tls_validation',
    kind: boolean,
    default: false,
    doc: 'Skip certificate checks of other servers. Never in production.',
  }),
  key({
    path: 'federation_api.prefer_direct_fetch',
    kind: boolean,
    default: false,
    doc:
      'Ask servers for their signing keys directly before asking `key_perspectives`; false asks the ' +
      'perspective servers first and the server itself last.',
  }),
  key({
    path: 'federation_api.key_perspectives',
    kind: list(
      record('perspective server', {
        server_name: { kind: serverName },
        keys: { kind: list(perspectiveKey) },
      }),
    ),
    default: [],
    doc:
      'Notary servers trusted to vouch for other servers\' signing keys, each with its own keys ' +
      '(`key_id`, unpadded base64 `public_key`). Empty: keys are only fetched directly.',
    example: [
      {
        server_name: 'matrix.org',
        keys: [{ key_id: 'ed25519:auto', public_key: 'Noi6WqcDj0QmPxCNQqgezwTlBKrfqehY1u2FyWP9uYw' }],
      },
    ],
  }),
  key({
    path: 'app_service_api.disable_tls_validation',
    kind: boolean,
    default: false,
    doc: 'Skip certificate checks when calling appservices. Not for production.',
  }),
  key({
    path: 'app_service_api.legacy_authorization',
    kind: boolean,
    default: false,
    doc:
      'Also send the `hs_token` to appservices as the `access_token` query parameter, for services ' +
      'written before the `Authorization` header (spec 1.4). The header is always sent.',
  }),
  key({
    path: 'app_service_config_files',
    kind: list(path),
    default: [],
    aliases: ['app_service_api.config_files'],
    doc:
      'Appservice registration files to load (their format: "Application services" in docs/CONFIG.md). ' +
      'Also read from `app_service_api.config_files`, where Dendrite keeps it; set only one of the two.',
    example: ['appservices/bridge.yaml'],
  }),
  key({
    path: 'logging',
    kind: list(logTarget),
    default: [{ type: 'std', level: 'info' }],
    doc:
      'Where logs go: each entry has `type` `std` (standard output) or `file` (to `hearth.log` in ' +
      'the folder `params.path`, default `<data_dir>/logs`) and `level` debug, info, warn or error ' +
      '(default info).',
    example: [
      { type: 'std', level: 'info' },
      { type: 'file', level: 'warn' },
    ],
  }),
];

/** Dendrite's single request limit, which the limits above replace. */
const RETIRED_RATE_LIMIT =
  'no longer has an effect: each limit has its own per_second and burst_count under client_api.rate_limiting';

export const SERVICE_IGNORED: readonly IgnoredKey[] = [
  {
    path: 'client_api.rate_limiting.threshold',
    doc: 'Accepted with a warning and ignored: Dendrite\'s one request limit, replaced by the limits of `client_api.rate_limiting`.',
    warning: RETIRED_RATE_LIMIT,
  },
  {
    path: 'client_api.rate_limiting.cooloff_ms',
    doc: 'Accepted with a warning and ignored, as `client_api.rate_limiting.threshold`.',
    warning: RETIRED_RATE_LIMIT,
  },
];
