// docs/CONFIG.md, rendered from the key table so the page cannot drift from the loader.

import { stringify } from 'yaml';
import { envName } from './load.js';
import { type KeyRecord, isDataDirDefault, rawDefault } from './keys.js';
import { CROSS_CHECKS, IGNORED_KEYS, KEYS, SECTIONS } from './schema.js';

const INTRO = `# Configuration

Hearth reads one YAML file laid out like Dendrite's configuration (version 2), so an existing
Dendrite file mostly carries over. This page is generated from the key table in \`src/config/\`;
\`generateConfig()\` (in \`src/config/generate.ts\`) writes a complete commented file with every key
at its default.

## How the file is read

- A key that is missing, or present with no value (\`key:\`), takes its default. Only
  \`global.server_name\` is required.
- Relative paths (including a relative SQLite \`file:\` path) are relative to the folder holding the
  configuration file. Keys that default into \`global.data_dir\` follow it unless set themselves.
- Keys Hearth does not know are not errors: they are returned as warnings and ignored, so files
  written for other servers (per-component \`database\` blocks, \`tracing\`, \`mscs\`, ...) still load.
- Every problem is reported at once: loading throws a \`ConfigError\` whose message has one line per
  problem, each starting with the key path, for example
  \`global.database.max_open_conns: must be a positive integer, got "x"\`.
- Durations are Go-style: a sequence of numbers with units \`h\`, \`m\`, \`s\`, \`ms\`, \`us\`, \`ns\`
  (\`168h0m0s\`, \`1h30m\`, \`500ms\`).
- Sizes are a number of bytes or a number with \`kb\`, \`mb\`, \`gb\` or \`tb\` (also \`k\`, \`kib\`, ...);
  the multiples are binary, so \`1gb\` is 1073741824 bytes.
- Booleans are \`true\` or \`false\`.

## Environment overrides

Any key can be set from the environment, which wins over the file. The variable is \`HEARTH_\`
followed by the key path in capitals with \`__\` between levels:

| Variable | Key |
|---|---|
| \`${envName('global.server_name')}=example.org\` | \`global.server_name\` |
| \`${envName('global.database.connection_string')}=postgres://hearth:secret@db/hearth\` | \`global.database.connection_string\` |
| \`${envName('client_api.rate_limiting.enabled')}=false\` | \`client_api.rate_limiting.enabled\` |
| \`${envName('global.jetstream.addresses')}=[nats://nats1:4222, nats://nats2:4222]\` | \`global.jetstream.addresses\` |
| \`${envName('app_service_config_files')}=[/etc/hearth/bridge.yaml]\` | \`app_service_config_files\` |

Values are read as YAML scalars (\`false\`, \`90\`, \`1gb\`), list keys also as flow lists
(\`[a, b]\`); any other text is taken as a plain string, and an empty value is the empty string.
A variable whose first level names a section but whose path names no key is reported as a warning;
other \`HEARTH_\` variables are left alone. Errors in an overridden value name the variable: with
\`HEARTH_USER_API__BCRYPT_COST=99\` loading fails with
\`user_api.bcrypt_cost (from HEARTH_USER_API__BCRYPT_COST): must be an integer from 4 to 31, got 99\`.

## Example

A single-process server on SQLite behind a reverse proxy needs only its name:

\`\`\`yaml
global:
  server_name: example.org
\`\`\`

A larger one on PostgreSQL and NATS, with shared-secret registration and TLS federation:

\`\`\`yaml
version: 2
global:
  server_name: example.org
  data_dir: /var/lib/hearth
  database:
    connection_string: postgres://hearth:secret@db.internal/hearth?sslmode=require
    max_open_conns: 50
  jetstream:
    addresses: [nats://nats.internal:4222]
  metrics:
    enabled: true
    basic_auth: { username: metrics, password: change-me }
listen:
  http: 127.0.0.1:8008
  https: 0.0.0.0:8448
  tls_cert: /etc/hearth/tls/fullchain.pem
  tls_key: /etc/hearth/tls/privkey.pem
client_api:
  registration_shared_secret: a-long-random-string
logging:
  - type: file
    level: info
    params: { path: /var/log/hearth }
\`\`\`

## Differences from Dendrite's layout

- \`global.data_dir\` is new: the default place of the database, media, signing key and bus store.
- \`listen\` is new: listening addresses live in the file instead of on the command line.
- \`global.protocol_name\` is new: the naming used towards other servers (\`chat\` or \`matrix\`).
- One database for everything: \`global.database\`; per-component \`database\` blocks are ignored
  (with a warning).
- \`app_service_config_files\` sits at the top level; \`app_service_api.config_files\` is read too.
- \`global.key_validity_period\` and other durations are stored in milliseconds, sizes in bytes.`;

const APPSERVICES = `## Application services

Each file listed in \`app_service_config_files\` registers one application service (a bridge or
a bot), in the YAML format Synapse and Dendrite read, so a bridge's generated registration carries
over unchanged. \`hearth generate-appservice\` writes a new one with fresh tokens:

\`\`\`sh
npx hearth generate-appservice --id irc --url http://127.0.0.1:9999 --sender-localpart ircbot \\
  --user-regex '@irc_.*:example\\.org' --alias-regex '#irc_.*:example\\.org' --out appservices/irc.yaml
\`\`\`

A registration:

\`\`\`yaml
id: irc
url: http://127.0.0.1:9999
as_token: 3bYGp0lc5Sgkh6bDmFq6Tm9PqQ6m3eVNH1yLq9Xo0hQ
hs_token: eHX1tCzxBzfw5lWjCkUOy2kQ4vQXvdJd0gKbjnIt3aM
sender_localpart: ircbot
rate_limited: false
protocols: [irc]
receive_ephemeral: true
namespaces:
  users:
    - exclusive: true
      regex: '@irc_.*:example\\.org'
  aliases:
    - exclusive: true
      regex: '#irc_.*:example\\.org'
  rooms: []
\`\`\`

| Field | Type | Default | Meaning |
|---|---|---|---|
| \`id\` | string | required | The service's name, unique among the registrations. |
| \`url\` | http or https URL, or null | \`null\` | Where the server sends the service its events; null: the service only acts and receives nothing. |
| \`as_token\` | string | required | The access token the service sends. |
| \`hs_token\` | string | required | The token the server sends to the service. No token may equal another service's \`as_token\` or \`hs_token\`. |
| \`sender_localpart\` | string | required | The localpart of the service's own user, \`@sender_localpart:<server_name>\`, which must be a valid user ID of this server. That user is the service's alone. |
| \`namespaces.users\`, \`.aliases\`, \`.rooms\` | list of \`{exclusive, regex}\` | \`[]\` | The user IDs, room aliases and room IDs the service is interested in; with \`exclusive: true\`, claimed for this service alone. An empty or missing list claims nothing. |
| \`rate_limited\` | boolean | \`true\` | Whether the service's users are rate limited. |
| \`protocols\` | list of string | \`[]\` | The third-party protocols the service bridges: \`/thirdparty/*\` lookups of them are asked of it. |
| \`receive_ephemeral\` (or \`de.sorunome.msc2409.push_ephemeral\`, \`push_ephemeral\`) | boolean | \`false\` | Whether typing notices, receipts, presence and to-device messages to its users' devices are sent too; any of the three names set to true turns it on. |
| \`org.matrix.msc3202\` | boolean | \`false\` | Accepted (MSC3202). Device lists and one-time key counts are not sent. The service may act as its users' devices with \`device_id\` whether or not this is set. |

Other fields are ignored. Regexes are JavaScript regular expressions that must match the whole ID,
server name included, as if written \`^(?:regex)$\`: \`@irc_.*\` claims \`@irc_alice:example.org\`,
\`@irc_[a-z]+\` claims nothing of it. Single-quote them in YAML, where \`@\` and \`#\` cannot start a
plain value, and write \`\\.\` for a dot.

The files are read when the server starts. As with the configuration, every problem is reported at
once, one line each naming the file and the field, and the server does not start:

\`\`\`
hearth serve: invalid configuration in app_service_config_files (1 problem):
  /etc/hearth/appservices/irc.yaml: namespaces.users[0].regex: invalid regular expression "@irc_(.*": Unterminated group
\`\`\`

Between files, these are errors: two services with the same \`id\` or the same \`sender_localpart\`,
a token used twice (in either role), two exclusive namespaces of the same kind with the same regex,
and an exclusive user namespace that matches another service's own user. Two different regexes
that happen to overlap are not detected.`;

/** The whole of docs/CONFIG.md. */
export function renderConfigMarkdown(): string {
  const out: string[] = [INTRO, '', '## Keys'];
  const groups = new Map<string, KeyRecord[]>();
  for (const record of KEYS) {
    const section = record.path.includes('.') ? record.path.slice(0, record.path.lastIndexOf('.')) : '';
    groups.set(section, [...(groups.get(section) ?? []), record]);
  }
  for (const [section, records] of groups) {
    out.push('', `### ${section === '' ? 'Top level' : `\`${section}\``}`, '');
    const about = SECTIONS[section];
    if (about !== undefined) out.push(about, '');
    out.push('| Key | Type | Default | Meaning |', '|---|---|---|---|');
    for (const record of records) {
      const aliases = (record.aliases ?? []).map((a) => ` (or \`${a}\`)`).join('');
      out.push(
        `| \`${record.path}\`${aliases} | ${cell(record.kind.label)} | ${cell(defaultText(record))} | ${cell(record.doc)} |`,
      );
    }
  }
  out.push('', '### Rules between keys', '');
  for (const rule of CROSS_CHECKS) out.push(`- ${rule.doc}`);
  out.push('', '### Accepted and ignored', '');
  for (const ignored of IGNORED_KEYS) out.push(`- \`${ignored.path}\`: ${ignored.doc}`);
  out.push('', APPSERVICES);
  return `${out.join('\n')}\n`;
}

function defaultText(record: KeyRecord): string {
  if (record.default === undefined) return 'required';
  const value = isDataDirDefault(record.default) ? rawDefault(record, '<data_dir>') : record.default;
  return `\`${stringify(value, { collectionStyle: 'flow', lineWidth: 0 }).trim()}\``;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}
