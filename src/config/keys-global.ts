// Key records of the `version`, `global` and `listen` sections.

import { type IgnoredKey, key } from './keys.js';
import {
  addressRange,
  bindAddress,
  boolean,
  clientBaseUrl,
  connectionString,
  duration,
  integer,
  list,
  natsAddress,
  oneOf,
  orNone,
  path,
  serverName,
  size,
  string,
} from './kinds.js';

export const GLOBAL_KEYS = [
  key({
    path: 'version',
    kind: integer(2, 2),
    default: 2,
    doc: 'Version of the file layout. Only Dendrite\'s layout version 2 exists.',
  }),
  key({
    path: 'global.server_name',
    kind: serverName,
    default: undefined,
    doc:
      'The name of this server: the part after the colon in user IDs, room aliases and room IDs ' +
      'created here. Required. It cannot be changed once accounts or rooms exist.',
    example: 'example.org',
  }),
  key({
    path: 'global.data_dir',
    kind: path,
    default: './data',
    doc:
      'Folder for everything the server keeps: the SQLite database (`hearth.db`), the signing key ' +
      '(`signing.key`), media (`media/`), log files (`logs/`) and the message-bus store ' +
      '(`jetstream/`), each unless its own key names another place. A relative path is relative to ' +
      'the configuration file\'s folder. A Hearth addition to the layout.',
  }),
  key({
    path: 'global.private_key',
    kind: path,
    default: { underDataDir: 'signing.key' },
    doc:
      'File holding the Ed25519 key that signs events and federation requests (not a TLS key).',
  }),
  key({
    path: 'global.key_validity_period',
    kind: duration(1),
    default: '168h0m0s',
    doc:
      'How long other servers may cache our signing key before asking for it again. Longer means ' +
      'fewer requests, but a leaked key stays trusted for longer.',
  }),
  key({
    path: 'global.well_known_server_name',
    kind: orNone(serverName),
    default: '',
    doc:
      '`host[:port]` served as `m.server` at `/.well-known/chat/server` (and `/.well-known/matrix/server`), ' +
      'delegating federation to another host. Empty: not served.',
    example: 'chat.example.org:443',
  }),
  key({
    path: 'global.well_known_client_name',
    kind: orNone(clientBaseUrl),
    default: '',
    doc:
      'Base URL served as `m.homeserver` at `/.well-known/chat/client` (and `/.well-known/matrix/client`) ' +
      'so clients find the client API; a bare `host[:port]` means `https://host[:port]`. Empty: not served.',
    example: 'https://chat.example.org',
  }),
  key({
    path: 'global.database.connection_string',
    kind: connectionString,
    default: { underDataDir: 'hearth.db', prefix: 'file:' },
    doc:
      '`file:<path>` selects SQLite (a relative path is relative to the configuration file\'s ' +
      'folder; `file::memory:` keeps everything in memory); `postgres://user:password@host/database` ' +
      '(or `postgresql://`) selects PostgreSQL.',
    example: 'postgres://hearth:secret@localhost/hearth?sslmode=disable',
  }),
  key({
    path: 'global.database.max_open_conns',
    kind: integer(1),
    default: 90,
    doc: 'Most database connections open at once.',
  }),
  key({
    path: 'global.database.max_idle_conns',
    kind: integer(0),
    default: 5,
    doc: 'Database connections kept open while idle.',
  }),
  key({
    path: 'global.database.conn_max_lifetime',
    kind: integer(-1),
    default: -1,
    doc: 'Seconds a database connection is reused before it is replaced; -1 (or 0) means no limit.',
  }),
  key({
    path: 'global.cache.max_size_estimated',
    kind: size(),
    default: '1gb',
    doc:
      'Estimated upper bound of the parsed-event cache (which also keeps at most 20,000 events), in ' +
      'bytes or with a kb, mb, gb or tb suffix (binary: 1kb = 1024 bytes). Not a limit on the memory ' +
      'of the whole process.',
  }),
  key({
    path: 'global.cache.max_age',
    kind: duration(1),
    default: '1h',
    doc: 'Longest time an event stays in the parsed-event cache before it is read again.',
  }),
  key({
    path: 'global.disable_federation',
    kind: boolean,
    default: false,
    doc: 'Turns federation off: the federation API is not served and nothing is sent to other servers.',
  }),
  key({
    path: 'global.protocol_name',
    kind: oneOf(['chat', 'matrix']),
    default: 'chat',
    doc:
      'Names used when this server reaches other servers: `chat` uses `/_chat` paths, ' +
      '`/.well-known/chat`, `_chat._tcp` SRV records and the X-Chat authorization scheme; `matrix` ' +
      'uses the Matrix names. Incoming requests are answered under both names either way.',
  }),
  key({
    path: 'global.jetstream.addresses',
    kind: list(natsAddress),
    default: [],
    doc:
      'NATS JetStream servers carrying the internal message bus, for deployments split over ' +
      'several processes. Empty: the bus runs inside the process.',
    example: ['nats://localhost:4222'],
  }),
  key({
    path: 'global.jetstream.in_memory',
    kind: boolean,
    default: false,
    doc: 'Keep the message-bus store in memory only (queued messages are lost on restart).',
  }),
  key({
    path: 'global.jetstream.topic_prefix',
    kind: string(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "-" or "_"'),
    default: 'Hearth',
    doc: 'Prefix of stream and subject names, so that several servers can share one NATS deployment.',
  }),
  key({
    path: 'global.jetstream.storage_path',
    kind: path,
    default: { underDataDir: 'jetstream' },
    doc: 'Folder of the message-bus store when the bus runs in the process and `in_memory` is false.',
  }),
  key({
    path: 'global.jetstream.disable_tls_validation',
    kind: boolean,
    default: false,
    doc: 'Skip certificate checks when connecting to NATS over TLS. Not for production.',
  }),
  key({
    path: 'global.metrics.enabled',
    kind: boolean,
    default: false,
    doc: 'Serve Prometheus metrics at `/metrics`.',
  }),
  key({
    path: 'global.metrics.basic_auth.username',
    kind: orNone(string()),
    default: '',
    doc: 'User name that `/metrics` requires (HTTP basic auth). Set both or neither. Empty: no auth.',
  }),
  key({
    path: 'global.metrics.basic_auth.password',
    kind: orNone(string()),
    default: '',
    doc: 'Password that `/metrics` requires (HTTP basic auth). Set both or neither.',
  }),
  key({
    path: 'global.presence.enable_inbound',
    kind: boolean,
    default: false,
    doc: 'Accept presence updates from other servers.',
  }),
  key({
    path: 'global.presence.enable_outbound',
    kind: boolean,
    default: false,
    doc: 'Send the presence of local users to other servers.',
  }),
  key({
    path: 'global.trusted_third_party_id_servers',
    kind: list(serverName),
    default: [],
    doc: 'Identity servers trusted to verify third-party identifiers such as email addresses.',
  }),
  key({
    path: 'global.trusted_proxies',
    kind: list(addressRange),
    default: [],
    doc:
      'Reverse proxies (IPv4 or IPv6 addresses and CIDR ranges) whose `X-Forwarded-For` header ' +
      'names the client. A proxy in front of Hearth must append the address it was connected from ' +
      'to that header (nginx: `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`, ' +
      'Caddy and Traefik do it by default). The client is the rightmost address of the header ' +
      'that is not itself a trusted proxy; it is used for per-address rate limits and recorded as ' +
      'the device\'s last-seen address. Empty: the header is ignored and the client is the ' +
      'connection\'s peer, so behind a proxy every user would share the proxy\'s address.',
    example: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'],
  }),
  key({
    path: 'listen.http',
    kind: orNone(bindAddress),
    default: '0.0.0.0:8008',
    doc:
      'Plain-HTTP listener for client, federation and operator traffic, usually behind a reverse ' +
      'proxy that terminates TLS. `:8008` means every IPv4 interface; `[::]:8008` every IPv6 one. ' +
      'Port 0 picks a free port. Empty: no plain-HTTP listener.',
  }),
  key({
    path: 'listen.https',
    kind: orNone(bindAddress),
    default: '',
    doc: 'TLS listener, by convention `0.0.0.0:8448` for federation; needs `tls_cert` and `tls_key`. Empty: none.',
    example: '0.0.0.0:8448',
  }),
  key({
    path: 'listen.tls_cert',
    kind: orNone(path),
    default: '',
    doc: 'PEM certificate chain of the TLS listener.',
  }),
  key({
    path: 'listen.tls_key',
    kind: orNone(path),
    default: '',
    doc: 'PEM private key of the TLS listener.',
  }),
];

export const GLOBAL_IGNORED: readonly IgnoredKey[] = [
  {
    path: 'global.report_stats',
    doc: 'Accepted in any form for compatibility and ignored: Hearth reports no usage statistics.',
  },
];
