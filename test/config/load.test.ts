import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type HearthConfig, loadConfig, parseConfig, parseConnectionString } from '../../src/config/index.js';
import { TempDir, configError, problemLines } from './helpers.js';

const tmp = new TempDir();
after(() => tmp.remove());

const MINIMAL = 'global:\n  server_name: example.org\n';
const RETIRED = 'no longer has an effect: each limit has its own per_second and burst_count under client_api.rate_limiting';

/** The configuration of MINIMAL in `dir`, written out by hand. */
function expectedDefaults(dir: string): HearthConfig {
  const data = join(dir, 'data');
  return {
    version: 2,
    global: {
      server_name: 'example.org',
      private_key: join(data, 'signing.key'),
      key_validity_period: 604_800_000,
      well_known_server_name: null,
      well_known_client_name: null,
      data_dir: data,
      database: {
        connection_string: `file:${join(data, 'hearth.db')}`,
        max_open_conns: 90,
        max_idle_conns: 5,
        conn_max_lifetime: -1,
      },
      cache: { max_size_estimated: 1_073_741_824, max_age: 3_600_000 },
      disable_federation: false,
      protocol_name: 'chat',
      jetstream: {
        addresses: [],
        in_memory: false,
        topic_prefix: 'Hearth',
        storage_path: join(data, 'jetstream'),
        disable_tls_validation: false,
      },
      metrics: { enabled: false, basic_auth: { username: null, password: null } },
      presence: { enable_inbound: false, enable_outbound: false },
      trusted_third_party_id_servers: [],
      trusted_proxies: [],
    },
    listen: { http: { host: '0.0.0.0', port: 8008 }, https: null, tls_cert: null, tls_key: null },
    client_api: {
      registration_disabled: true,
      guests_disabled: true,
      registration_shared_secret: null,
      registration_requires_token: false,
      rate_limiting: {
        enabled: true,
        exempt_user_ids: [],
        message: { per_second: 1, burst_count: 100 },
        room_creation: { per_second: 0.016, burst_count: 10 },
        joins: { per_second: 0.1, burst_count: 10 },
        invites: { per_second: 0.3, burst_count: 10 },
        login: {
          address: { per_second: 0.05, burst_count: 20 },
          account: { per_second: 0.003, burst_count: 5 },
          failed_attempts: { per_second: 0.17, burst_count: 3 },
        },
        registration: { per_second: 0.17, burst_count: 3 },
        registration_token_validity: { per_second: 0.1, burst_count: 5 },
        media_create: { per_second: 10, burst_count: 50 },
      },
    },
    user_api: { bcrypt_cost: 10 },
    media_api: {
      base_path: join(data, 'media'),
      max_file_size_bytes: 52_428_800,
      max_pending_uploads: 5,
      dynamic_thumbnails: true,
      max_thumbnail_generators: 10,
      thumbnail_sizes: [
        { width: 32, height: 32, method: 'crop' },
        { width: 96, height: 96, method: 'crop' },
        { width: 640, height: 480, method: 'scale' },
      ],
      url_preview: {
        enabled: false,
        ip_range_blacklist: [
          '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
          '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24',
          '224.0.0.0/4', '240.0.0.0/4', '::/128', '::1/128', 'fe80::/10', 'fc00::/7', '2001:db8::/32', 'ff00::/8', 'fec0::/10',
        ],
        ip_range_whitelist: [],
        url_blacklist: [],
        max_spider_size: 10_485_760,
        timeout: 10_000,
      },
    },
    room_server: { default_room_version: '10' },
    sync_api: { search: { enabled: true, language: 'en' } },
    federation_api: {
      send_max_retries: 16,
      disable_tls_validation: false,
      prefer_direct_fetch: false,
      key_perspectives: [],
    },
    app_service_api: { disable_tls_validation: false, legacy_authorization: false },
    app_service_config_files: [],
    logging: [{ type: 'std', level: 'info', path: null }],
  };
}

/** The single problem line of a file made of MINIMAL plus `extra` (indented text continues `global:`). */
function onlyProblem(extra: string): string {
  const lines = problemLines(configError(() => parseConfig(MINIMAL + extra, { baseDir: tmp.path })));
  assert.equal(lines.length, 1, lines.join('\n'));
  return lines[0]!;
}

describe('defaults', () => {
  test('a file naming only the server gets every default, paths under its folder', () => {
    const file = tmp.write('defaults/hearth.yaml', MINIMAL);
    const { config, warnings } = loadConfig(file, {});
    assert.deepEqual(config, expectedDefaults(join(tmp.path, 'defaults')));
    assert.deepEqual(warnings, []);
  });

  test('empty sections and keys without values take defaults', () => {
    const text = 'version:\nglobal:\n  server_name: example.org\n  database:\n  jetstream:\n    addresses:\nmedia_api:\n';
    const { config } = parseConfig(text, { baseDir: tmp.path });
    assert.deepEqual(config, expectedDefaults(tmp.path));
  });

  test('the server name is required', () => {
    for (const text of ['', 'global:\n', 'global:\n  server_name:\n', '# only a comment\n']) {
      const err = configError(() => parseConfig(text, { baseDir: tmp.path }));
      assert.deepEqual(problemLines(err), ['global.server_name: is required'], JSON.stringify(text));
    }
  });
});

describe('bad values name their key path', () => {
  const cases: [string, string][] = [
    ['  database:\n    max_open_conns: x\n', 'global.database.max_open_conns: must be a positive integer, got "x"'],
    ['  database:\n    max_open_conns: 0\n', 'global.database.max_open_conns: must be a positive integer, got 0'],
    ['  database:\n    max_idle_conns: 1.5\n', 'global.database.max_idle_conns: must be a non-negative integer, got 1.5'],
    ['  database:\n    conn_max_lifetime: -2\n', 'global.database.conn_max_lifetime: must be an integer ≥ -1, got -2'],
    ['  database:\n    connection_string: mysql://u@h/db\n', 'global.database.connection_string: must start with file: (SQLite) or postgres:// / postgresql:// (PostgreSQL), got "mysql://u@h/db"'],
    ['  database:\n    connection_string: postgres://[oops\n', 'global.database.connection_string: must be a valid postgres:// URL, got "postgres://[oops"'],
    ['  key_validity_period: 7d\n', 'global.key_validity_period: must be a positive duration such as "1h30m" or "500ms", got "7d"'],
    ['  key_validity_period: 0s\n', 'global.key_validity_period: must be a positive duration such as "1h30m" or "500ms", got "0s"'],
    ['  key_validity_period: 3600\n', 'global.key_validity_period: must be a positive duration such as "1h30m" or "500ms", got 3600'],
    ['  cache:\n    max_size_estimated: 1pb\n', 'global.cache.max_size_estimated: must be a size such as "512mb", "1gb" or a number of bytes, got "1pb"'],
    ['  protocol_name: xmpp\n', 'global.protocol_name: must be one of chat, matrix, got "xmpp"'],
    ['  disable_federation: yes\n', 'global.disable_federation: must be true or false, got "yes"'],
    ['  disable_federation: [true]\n', 'global.disable_federation: must be true or false, got a list'],
    ['  well_known_server_name: https://x.org\n', 'global.well_known_server_name: must be a server name: host or host:port, got "https://x.org"'],
    ['  well_known_client_name: ftp://x.org\n', 'global.well_known_client_name: must be an http(s) URL or host[:port], got "ftp://x.org"'],
    ['  jetstream:\n    addresses: [http://nats:4222]\n', 'global.jetstream.addresses[0]: must be a nats:// URL or host:port, got "http://nats:4222"'],
    ['  jetstream:\n    addresses: nats://nats:4222\n', 'global.jetstream.addresses: must be a list, got "nats://nats:4222"'],
    ['  jetstream:\n    topic_prefix: a.b\n', 'global.jetstream.topic_prefix: must be letters, digits, "-" or "_", got "a.b"'],
    ['  data_dir: ""\n', 'global.data_dir: must be a non-empty path, got ""'],
    ['  database: 5\n', 'global.database: must be a mapping, got 5'],
    ['version: 1\n', 'version: must be 2, got 1'],
    ['listen:\n  http: localhost\n', 'listen.http: must be a listening address host:port (host may be empty), got "localhost"'],
    ['user_api:\n  bcrypt_cost: 3\n', 'user_api.bcrypt_cost: must be an integer from 4 to 31, got 3'],
    ['user_api:\n  bcrypt_cost: 32\n', 'user_api.bcrypt_cost: must be an integer from 4 to 31, got 32'],
    ['client_api:\n  rate_limiting:\n    exempt_user_ids: [bob]\n', 'client_api.rate_limiting.exempt_user_ids[0]: must be a user ID @localpart:server_name, got "bob"'],
    ['client_api:\n  rate_limiting:\n    message:\n      per_second: 0\n', 'client_api.rate_limiting.message.per_second: must be a number above 0, got 0'],
    ['client_api:\n  rate_limiting:\n    message:\n      per_second: fast\n', 'client_api.rate_limiting.message.per_second: must be a number above 0, got "fast"'],
    ['client_api:\n  rate_limiting:\n    login:\n      failed_attempts:\n        burst_count: 2.5\n', 'client_api.rate_limiting.login.failed_attempts.burst_count: must be a positive integer, got 2.5'],
    ['client_api:\n  rate_limiting:\n    login: 5\n', 'client_api.rate_limiting.login: must be a mapping, got 5'],
    ['  trusted_proxies: 10.0.0.1\n', 'global.trusted_proxies: must be a list, got "10.0.0.1"'],
    ['  trusted_proxies: [10.0.0.0/33]\n', 'global.trusted_proxies[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "10.0.0.0/33"'],
    ['  trusted_proxies: [proxy.example.org]\n', 'global.trusted_proxies[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "proxy.example.org"'],
    ['media_api:\n  url_preview:\n    ip_range_whitelist: [10.0.0.0/33]\n', 'media_api.url_preview.ip_range_whitelist[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "10.0.0.0/33"'],
    ['media_api:\n  url_preview:\n    url_blacklist: [{netloc: "^(("}]\n', 'media_api.url_preview.url_blacklist[0].netloc: must be a glob pattern or a regular expression starting with ^, got "^(("'],
    ['media_api:\n  url_preview:\n    max_spider_size: 0\n', 'media_api.url_preview.max_spider_size: must be a size such as "512mb", "1gb" or a number of bytes (at least 1), got 0'],
    ['media_api:\n  max_pending_uploads: 0\n', 'media_api.max_pending_uploads: must be a positive integer, got 0'],
    ['  trusted_proxies: ["::1", "fd00::/129"]\n', 'global.trusted_proxies[1]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "fd00::/129"'],
    ['  trusted_proxies: ["fe80::1%eth0"]\n', 'global.trusted_proxies[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "fe80::1%eth0"'],
    ['  trusted_proxies: ["10.0.0.0/"]\n', 'global.trusted_proxies[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got "10.0.0.0/"'],
    ['  trusted_proxies: [8]\n', 'global.trusted_proxies[0]: must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8, got 8'],
    ['media_api:\n  max_file_size_bytes: -1\n', 'media_api.max_file_size_bytes: must be a size such as "512mb", "1gb" or a number of bytes, got -1'],
    ['media_api:\n  thumbnail_sizes:\n    - {width: 32, height: 32, method: crop}\n    - {width: 96, height: 96, method: stretch}\n', 'media_api.thumbnail_sizes[1].method: must be one of crop, scale, got "stretch"'],
    ['media_api:\n  thumbnail_sizes:\n    - {height: 32, method: crop}\n', 'media_api.thumbnail_sizes[0].width: is required'],
    ['media_api:\n  thumbnail_sizes: [7]\n', 'media_api.thumbnail_sizes[0]: must be a mapping (thumbnail size), got 7'],
    ['sync_api:\n  search:\n    language: English\n', 'sync_api.search.language: must be a language code such as "en", got "English"'],
    ['room_server:\n  default_room_version: 13\n', 'room_server.default_room_version: must be one of 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, got 13'],
    ['federation_api:\n  key_perspectives:\n    - server_name: matrix.org\n      keys:\n        - key_id: auto\n          public_key: Noi6WqcDj0QmPxCNQqgezwTlBKrfqehY1u2FyWP9uYw\n', 'federation_api.key_perspectives[0].keys[0].key_id: must be ed25519:<name>, got "auto"'],
    ['federation_api:\n  key_perspectives:\n    - server_name: matrix.org\n      keys:\n        - key_id: ed25519:auto\n          public_key: abc\n', 'federation_api.key_perspectives[0].keys[0].public_key: must be the unpadded base64 of a 32-byte key, got "abc"'],
    ['federation_api:\n  send_max_retries: many\n', 'federation_api.send_max_retries: must be a non-negative integer, got "many"'],
    ['logging:\n  - type: std\n    level: verbose\n', 'logging[0].level: must be one of debug, info, warn, error, got "verbose"'],
    ['logging:\n  - type: std\n  - type: file\n    params: {path: ""}\n', 'logging[1].params.path: must be a folder for the log files, got ""'],
    ['logging:\n  - level: info\n', 'logging[0].type: is required'],
    ['app_service_config_files: [""]\n', 'app_service_config_files[0]: must be a non-empty path, got ""'],
  ];
  for (const [extra, line] of cases) {
    test(line, () => assert.equal(onlyProblem(extra), line));
  }

  test('a top level that is not a mapping', () => {
    const err = configError(() => parseConfig('- a\n- b\n', { baseDir: tmp.path }));
    assert.deepEqual(problemLines(err), ['(top level): must be a mapping of sections, got a list']);
  });
});

describe('several problems are reported together', () => {
  test('every bad key has its own line, in one error', () => {
    const text = [
      'global:',
      '  server_name: "not a name"',
      '  database:',
      '    max_open_conns: x',
      '  cache:',
      '    max_age: soon',
      'user_api:',
      '  bcrypt_cost: 99',
      'media_api:',
      '  thumbnail_sizes:',
      '    - {width: 0, height: 32, method: fill}',
      '',
    ].join('\n');
    const file = tmp.write('several/hearth.yaml', text);
    const err = configError(() => loadConfig(file, {}));
    assert.equal(err.message.split('\n')[0], `invalid configuration in ${file} (6 problems):`);
    assert.deepEqual(problemLines(err).sort(), [
      'global.cache.max_age: must be a positive duration such as "1h30m" or "500ms", got "soon"',
      'global.database.max_open_conns: must be a positive integer, got "x"',
      'global.server_name: must be a server name: host or host:port, got "not a name"',
      'media_api.thumbnail_sizes[0].method: must be one of crop, scale, got "fill"',
      'media_api.thumbnail_sizes[0].width: must be a positive integer, got 0',
      'user_api.bcrypt_cost: must be an integer from 4 to 31, got 99',
    ]);
    assert.deepEqual(
      err.issues.map((i) => i.path).sort(),
      ['global.cache.max_age', 'global.database.max_open_conns', 'global.server_name', 'media_api.thumbnail_sizes[0].method', 'media_api.thumbnail_sizes[0].width', 'user_api.bcrypt_cost'],
    );
  });

  test('YAML syntax errors carry their line', () => {
    const err = configError(() => parseConfig('global:\n  server_name: a\n  server_name: b\n', { baseDir: tmp.path }));
    assert.equal(err.issues.length, 1);
    assert.match(err.issues[0]!.path, /line 3/);
    assert.match(err.issues[0]!.message, /unique/);
    const broken = configError(() => parseConfig('global: [1,\n', { baseDir: tmp.path }));
    assert.match(broken.issues[0]!.path, /^\(yaml, line \d+ column \d+\)$/);
  });

  test('an unreadable file is a ConfigError too', () => {
    const missing = join(tmp.path, 'nope.yaml');
    const err = configError(() => loadConfig(missing, {}));
    assert.equal(err.issues[0]!.path, '(file)');
    assert.match(err.message, /cannot read/);
  });
});

describe('rules between keys', () => {
  test('a TLS listener needs a certificate and a key', () => {
    const err = configError(() => parseConfig(MINIMAL + 'listen:\n  https: ":8448"\n', { baseDir: tmp.path }));
    assert.deepEqual(problemLines(err), [
      'listen.tls_cert: is required when listen.https is set',
      'listen.tls_key: is required when listen.https is set',
    ]);
    const ok = parseConfig(MINIMAL + 'listen:\n  https: ":8448"\n  tls_cert: tls/c.pem\n  tls_key: /k.pem\n', { baseDir: tmp.path });
    assert.deepEqual(ok.config.listen, {
      http: { host: '0.0.0.0', port: 8008 },
      https: { host: '0.0.0.0', port: 8448 },
      tls_cert: join(tmp.path, 'tls/c.pem'),
      tls_key: '/k.pem',
    });
  });

  test('a certificate without its key', () => {
    assert.equal(onlyProblem('listen:\n  tls_cert: c.pem\n'), 'listen.tls_key: is required when listen.tls_cert is set');
    assert.equal(onlyProblem('listen:\n  tls_key: k.pem\n'), 'listen.tls_cert: is required when listen.tls_key is set');
  });

  test('metrics credentials go together', () => {
    assert.equal(
      onlyProblem('  metrics:\n    basic_auth:\n      username: metrics\n'),
      'global.metrics.basic_auth.password: is required when the user name is set',
    );
    assert.equal(
      onlyProblem('  metrics:\n    basic_auth:\n      password: secret\n'),
      'global.metrics.basic_auth.username: is required when the password is set',
    );
    const { config } = parseConfig(MINIMAL + '  metrics:\n    enabled: true\n    basic_auth: {username: m, password: p}\n', { baseDir: tmp.path });
    assert.deepEqual(config.global.metrics, { enabled: true, basic_auth: { username: 'm', password: 'p' } });
  });

  test('the appservice list may be spelled either way, but only once', () => {
    const dendrite = parseConfig(MINIMAL + 'app_service_api:\n  config_files: [as/bridge.yaml]\n', { baseDir: tmp.path });
    assert.deepEqual(dendrite.config.app_service_config_files, [join(tmp.path, 'as/bridge.yaml')]);
    assert.deepEqual(dendrite.warnings, []);
    const ours = parseConfig(MINIMAL + 'app_service_config_files: [/etc/as.yaml]\n', { baseDir: tmp.path });
    assert.deepEqual(ours.config.app_service_config_files, ['/etc/as.yaml']);
    assert.equal(
      onlyProblem('app_service_config_files: [a.yaml]\napp_service_api:\n  config_files: [b.yaml]\n'),
      'app_service_api.config_files: set either app_service_config_files or app_service_api.config_files, not both',
    );
    assert.equal(
      onlyProblem('app_service_api:\n  config_files: [7]\n'),
      'app_service_api.config_files[0]: must be a non-empty path, got 7',
    );
  });
});

describe('unknown keys', () => {
  test('a Dendrite-style file loads; keys of other servers come back as warnings', () => {
    const text = `
version: 2
global:
  server_name: example.org
  private_key: matrix_key.pem
  old_private_keys:
  key_validity_period: 168h0m0s
  database:
    connection_string: postgresql://dendrite:pw@localhost/dendrite?sslmode=disable
    max_open_conns: 90
    max_idle_conns: 5
    conn_max_lifetime: -1
  cache:
    max_size_estimated: 1gb
    max_age: 1h
  trusted_third_party_id_servers:
    - matrix.org
    - vector.im
  report_stats:
    enabled: false
    endpoint: https://example.org/report-usage-stats/push
  server_notices:
    enabled: false
  jetstream:
    addresses:
    storage_path: ./
    topic_prefix: Dendrite
  dns_cache:
    enabled: false
app_service_api:
  disable_tls_validation: false
  config_files:
client_api:
  registration_disabled: true
  turn:
    turn_user_lifetime: "5m"
  rate_limiting:
    enabled: true
    threshold: 20
    cooloff_ms: 500
    exempt_user_ids:
media_api:
  base_path: ./media_store
  max_file_size_bytes: 10485760
  database:
    connection_string: file:mediaapi.db
  thumbnail_sizes:
    - width: 32
      height: 32
      method: crop
      quality: 80
mscs:
  mscs:
tracing:
  enabled: false
logging:
  - type: std
    level: info
  - type: file
    level: info
    params:
      path: ./logs
      max_size: 100
`;
    const file = tmp.write('dendrite/dendrite.yaml', text);
    const dir = join(tmp.path, 'dendrite');
    const loaded = loadConfig(file, {});
    const { config } = loaded;
    const retired = loaded.warnings.filter((w) => w.path.startsWith('client_api.rate_limiting.'));
    const warnings = loaded.warnings.filter((w) => !retired.includes(w));
    assert.deepEqual(warnings.map((w) => w.path).sort(), [
      'client_api.turn',
      'global.dns_cache',
      'global.old_private_keys',
      'global.server_notices',
      'logging[1].params.max_size',
      'media_api.database',
      'media_api.thumbnail_sizes[0].quality',
      'mscs',
      'tracing',
    ]);
    for (const w of warnings) assert.equal(w.message, 'unknown key, ignored');
    // Dendrite's single request limit loads, with a warning that it no longer does anything.
    assert.deepEqual(retired, [
      { path: 'client_api.rate_limiting.threshold', message: RETIRED },
      { path: 'client_api.rate_limiting.cooloff_ms', message: RETIRED },
    ]);
    assert.equal(config.client_api.rate_limiting.enabled, true);
    assert.equal(config.global.private_key, join(dir, 'matrix_key.pem'));
    assert.equal(config.global.database.connection_string, 'postgresql://dendrite:pw@localhost/dendrite?sslmode=disable');
    assert.deepEqual(config.global.trusted_third_party_id_servers, ['matrix.org', 'vector.im']);
    assert.deepEqual(config.global.jetstream.addresses, []);
    assert.equal(config.global.jetstream.storage_path, dir);
    assert.equal(config.global.jetstream.topic_prefix, 'Dendrite');
    assert.deepEqual(config.client_api.rate_limiting.exempt_user_ids, []);
    assert.equal(config.media_api.base_path, join(dir, 'media_store'));
    assert.equal(config.media_api.max_file_size_bytes, 10_485_760);
    assert.deepEqual(config.media_api.thumbnail_sizes, [{ width: 32, height: 32, method: 'crop' }]);
    assert.deepEqual(config.app_service_config_files, []);
    assert.deepEqual(config.logging, [
      { type: 'std', level: 'info', path: null },
      { type: 'file', level: 'info', path: join(dir, 'logs') },
    ]);
  });
});

describe('rate limits and trusted proxies', () => {
  test('a limit set in part keeps the defaults of the rest; rates may be fractions', () => {
    const text = MINIMAL + 'client_api:\n  rate_limiting:\n    message: {per_second: 0.5}\n    login:\n      address: {burst_count: 50}\n';
    const { config, warnings } = parseConfig(text, { baseDir: tmp.path });
    assert.deepEqual(warnings, []);
    const defaults = expectedDefaults(tmp.path).client_api.rate_limiting;
    assert.deepEqual(config.client_api.rate_limiting, {
      ...defaults,
      message: { per_second: 0.5, burst_count: defaults.message.burst_count },
      login: { ...defaults.login, address: { per_second: defaults.login.address.per_second, burst_count: 50 } },
    });
  });

  test('proxies load as address/prefix, v4 and v6, bare addresses as single hosts', () => {
    const text = MINIMAL + '  trusted_proxies: [127.0.0.1, 10.0.0.0/8, "::1", "fd00::/8", "::ffff:192.0.2.0/120", 0.0.0.0/0]\n';
    const { config } = parseConfig(text, { baseDir: tmp.path });
    assert.deepEqual(config.global.trusted_proxies, ['127.0.0.1/32', '10.0.0.0/8', '::1/128', 'fd00::/8', '::ffff:192.0.2.0/120', '0.0.0.0/0']);
  });

  test('the retired keys warn from the environment too, and a bad one is no error', () => {
    const { warnings } = parseConfig(MINIMAL + 'client_api:\n  rate_limiting:\n    threshold: many\n', {
      baseDir: tmp.path,
      env: { HEARTH_CLIENT_API__RATE_LIMITING__COOLOFF_MS: '500' },
    });
    assert.deepEqual(warnings, [
      { path: 'client_api.rate_limiting.threshold', message: RETIRED },
      { path: 'HEARTH_CLIENT_API__RATE_LIMITING__COOLOFF_MS', message: RETIRED },
    ]);
  });
});

describe('environment overrides', () => {
  const file = tmp.write(
    'env/hearth.yaml',
    'global:\n  server_name: file.example\n  database:\n    max_open_conns: 10\nclient_api:\n  registration_shared_secret: from-file\n',
  );

  test('HEARTH_<PATH> variables win over the file, read as YAML scalars', () => {
    const env = {
      HEARTH_GLOBAL__SERVER_NAME: 'env.example:8448',
      HEARTH_GLOBAL__DATABASE__CONNECTION_STRING: 'postgres://h:pw@db/hearth',
      HEARTH_GLOBAL__DATABASE__MAX_OPEN_CONNS: '12',
      HEARTH_GLOBAL__CACHE__MAX_SIZE_ESTIMATED: '512mb',
      HEARTH_GLOBAL__KEY_VALIDITY_PERIOD: '1h30m',
      HEARTH_CLIENT_API__RATE_LIMITING__ENABLED: 'false',
      HEARTH_CLIENT_API__REGISTRATION_SHARED_SECRET: 'a: b # not a comment',
      HEARTH_GLOBAL__JETSTREAM__ADDRESSES: '[nats://a:4222, b:4222]',
      HEARTH_LISTEN__HTTP: '127.0.0.1:0',
      HEARTH_media_api__dynamic_thumbnails: 'false',
      HEARTH_APP_SERVICE_API__CONFIG_FILES: '[as.yaml]',
      HEARTH_GLOBAL__DATA_DIR: 'state',
      PATH: '/usr/bin',
      hearth_user_api__bcrypt_cost: '99',
    };
    const { config, warnings } = loadConfig(file, env);
    const dir = join(tmp.path, 'env');
    assert.deepEqual(warnings, []);
    assert.equal(config.global.server_name, 'env.example:8448');
    assert.equal(config.global.database.connection_string, 'postgres://h:pw@db/hearth');
    assert.equal(config.global.database.max_open_conns, 12);
    assert.equal(config.global.cache.max_size_estimated, 536_870_912);
    assert.equal(config.global.key_validity_period, 5_400_000);
    assert.equal(config.client_api.rate_limiting.enabled, false);
    assert.equal(config.client_api.registration_shared_secret, 'a: b # not a comment');
    assert.deepEqual(config.global.jetstream.addresses, ['nats://a:4222', 'b:4222']);
    assert.deepEqual(config.listen.http, { host: '127.0.0.1', port: 0 });
    assert.equal(config.media_api.dynamic_thumbnails, false);
    assert.deepEqual(config.app_service_config_files, [join(dir, 'as.yaml')]);
    assert.equal(config.global.data_dir, join(dir, 'state'));
    assert.equal(config.global.private_key, join(dir, 'state', 'signing.key'), 'derived defaults follow the overridden data_dir');
    assert.equal(config.user_api.bcrypt_cost, 10, 'the prefix is upper-case only');
  });

  test('an empty value is the empty string; null means the default', () => {
    const empty = loadConfig(file, { HEARTH_CLIENT_API__REGISTRATION_SHARED_SECRET: '' });
    assert.equal(empty.config.client_api.registration_shared_secret, null);
    const reset = loadConfig(file, { HEARTH_GLOBAL__DATABASE__MAX_OPEN_CONNS: 'null' });
    assert.equal(reset.config.global.database.max_open_conns, 90);
  });

  test('errors in overridden values name the variable', () => {
    const err = configError(() =>
      loadConfig(file, {
        HEARTH_USER_API__BCRYPT_COST: '99',
        HEARTH_GLOBAL__WELL_KNOWN_SERVER_NAME: '@weird',
        HEARTH_GLOBAL__JETSTREAM__IN_MEMORY: 'yes',
        HEARTH_GLOBAL__SERVER_NAME: '{a: 1}',
      }),
    );
    assert.deepEqual(problemLines(err), [
      'global.server_name (from HEARTH_GLOBAL__SERVER_NAME): must be a server name: host or host:port, got "{a: 1}"',
      'global.well_known_server_name (from HEARTH_GLOBAL__WELL_KNOWN_SERVER_NAME): must be a server name: host or host:port, got "@weird"',
      'global.jetstream.in_memory (from HEARTH_GLOBAL__JETSTREAM__IN_MEMORY): must be true or false, got "yes"',
      'user_api.bcrypt_cost (from HEARTH_USER_API__BCRYPT_COST): must be an integer from 4 to 31, got 99',
    ]);
  });

  test('variables that look like keys but name none are warnings; other HEARTH_ variables are left alone', () => {
    const { warnings } = loadConfig(file, {
      HEARTH_GLOBAL__SERVRE_NAME: 'x',
      HEARTH_MEDIA_API__MAX_SIZE: '1',
      HEARTH_TEST_DATABASE_URL: 'postgres://x',
      HEARTH_GLOBAL__REPORT_STATS: 'true',
    });
    assert.deepEqual(warnings, [
      { path: 'HEARTH_GLOBAL__SERVRE_NAME', message: 'names no configuration key (global.servre_name), ignored' },
      { path: 'HEARTH_MEDIA_API__MAX_SIZE', message: 'names no configuration key (media_api.max_size), ignored' },
    ]);
  });
});

describe('paths', () => {
  test('relative paths resolve against the folder of the file; absolute ones stay', () => {
    const text = [
      'global:',
      '  server_name: example.org',
      '  data_dir: ../state',
      '  private_key: keys/signing.key',
      '  database:',
      '    connection_string: file:db/hearth.db?cache=shared',
      '  jetstream:',
      '    storage_path: /srv/bus',
      'media_api:',
      '  base_path: /srv/media',
      'listen:',
      '  https: "[::]:8448"',
      '  tls_cert: tls/cert.pem',
      '  tls_key: ./tls/key.pem',
      'app_service_config_files: [as/irc.yaml, /etc/as/slack.yaml]',
      'logging:',
      '  - {type: file, level: debug, params: {path: logs}}',
      '',
    ].join('\n');
    const file = tmp.write('paths/conf/hearth.yaml', text);
    const dir = join(tmp.path, 'paths/conf');
    const { config } = loadConfig(file, {});
    assert.equal(config.global.data_dir, join(tmp.path, 'paths/state'));
    assert.equal(config.global.private_key, join(dir, 'keys/signing.key'));
    assert.equal(config.global.database.connection_string, `file:${join(dir, 'db/hearth.db')}?cache=shared`);
    assert.equal(config.global.jetstream.storage_path, '/srv/bus');
    assert.equal(config.media_api.base_path, '/srv/media');
    assert.equal(config.listen.tls_cert, join(dir, 'tls/cert.pem'));
    assert.equal(config.listen.tls_key, join(dir, 'tls/key.pem'));
    assert.deepEqual(config.listen.https, { host: '::', port: 8448 });
    assert.deepEqual(config.app_service_config_files, [join(dir, 'as/irc.yaml'), '/etc/as/slack.yaml']);
    assert.deepEqual(config.logging, [{ type: 'file', level: 'debug', path: join(dir, 'logs') }]);
  });

  test('keys that default into data_dir follow it', () => {
    const { config } = parseConfig(MINIMAL + '  data_dir: /var/lib/hearth/\n', { baseDir: tmp.path });
    assert.equal(config.global.data_dir, '/var/lib/hearth');
    assert.equal(config.global.private_key, '/var/lib/hearth/signing.key');
    assert.equal(config.global.database.connection_string, 'file:/var/lib/hearth/hearth.db');
    assert.equal(config.global.jetstream.storage_path, '/var/lib/hearth/jetstream');
    assert.equal(config.media_api.base_path, '/var/lib/hearth/media');
  });

  test('a log file target without params.path writes into <data_dir>/logs', () => {
    const logging = 'logging:\n  - {type: file, level: warn}\n  - {type: file, params: {path: elsewhere}}\n';
    const relative = parseConfig(MINIMAL + logging, { baseDir: tmp.path }).config;
    assert.deepEqual(relative.logging, [
      { type: 'file', level: 'warn', path: join(tmp.path, 'data', 'logs') },
      { type: 'file', level: 'info', path: join(tmp.path, 'elsewhere') },
    ]);
    const moved = parseConfig(MINIMAL + '  data_dir: /var/lib/hearth\n' + logging, {
      baseDir: tmp.path,
      env: { HEARTH_GLOBAL__DATA_DIR: '/srv/hearth' },
    }).config;
    assert.equal(moved.logging[0]!.path, '/srv/hearth/logs');
  });
});

describe('database backend', () => {
  test('postgres:// and postgresql:// select PostgreSQL, file: SQLite', () => {
    const cases: [string, 'sqlite' | 'postgres'][] = [
      ['postgres://u:p@localhost/hearth', 'postgres'],
      ['postgresql://u@db.internal:6432/hearth?sslmode=require', 'postgres'],
      ['file:hearth.db', 'sqlite'],
      ['file::memory:', 'sqlite'],
    ];
    for (const [text, kind] of cases) {
      const { config } = parseConfig(`${MINIMAL}  database:\n    connection_string: "${text}"\n`, { baseDir: tmp.path });
      const target = parseConnectionString(config.global.database.connection_string, '/elsewhere');
      assert.ok(typeof target !== 'string');
      assert.equal(target.kind, kind, text);
      if (target.kind === 'sqlite' && text === 'file:hearth.db') assert.equal(target.path, join(tmp.path, 'hearth.db'));
    }
  });
});
