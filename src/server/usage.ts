// The `hearth` command's subcommands: their options (as node:util parseArgs reads them) and their
// usage texts. Kept apart from the commands themselves so that `--help` and bad usage are answered
// without loading the server.

import type { ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandUsage {
  /** One line for the overview of `hearth help`. */
  readonly summary: string;
  /** The full text of `hearth <command> --help`. */
  readonly usage: string;
  readonly options: Options;
  /** Whether the command takes arguments besides its options. */
  readonly allowPositionals?: boolean;
}

const HELP_LINE = '  -h, --help                       Show this text.';

export const SERVE: CommandUsage = {
  summary: 'Run the server.',
  options: {
    config: { type: 'string', short: 'c' },
    'http-bind-address': { type: 'string' },
    'https-bind-address': { type: 'string' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  },
  usage: `Usage: hearth serve [--config FILE] [--http-bind-address HOST:PORT]
                    [--https-bind-address HOST:PORT --tls-cert FILE --tls-key FILE]

Runs the server until SIGINT or SIGTERM.

Options:
  -c, --config FILE                The configuration file (default ./hearth.yaml). Without this
                                   flag, a missing ./hearth.yaml is written with defaults first.
  --http-bind-address HOST:PORT    Overrides listen.http.
  --https-bind-address HOST:PORT   Overrides listen.https (needs a certificate and key).
  --tls-cert FILE                  Overrides listen.tls_cert.
  --tls-key FILE                   Overrides listen.tls_key.
${HELP_LINE}
`,
};

export const REGISTER: CommandUsage = {
  summary: 'Create an account directly in the database.',
  options: {
    config: { type: 'string', short: 'c' },
    username: { type: 'string', short: 'u' },
    password: { type: 'string', short: 'p' },
    admin: { type: 'boolean', default: false },
  },
  usage: `Usage: hearth register [--config FILE] --username NAME [--password PASSWORD] [--admin]

Creates an account directly in the database, whether the server runs or not. Registration
settings do not apply; the username rules do.

Without --password, the password is asked for (twice, not shown) when standard input is a
terminal, and otherwise read from the first line of standard input:
    printf '%s\\n' "$PASSWORD" | hearth register --username alice
A password given with --password is visible to other users of the machine (ps) and is kept in
the shell's history.

Options:
  -c, --config FILE                The configuration file (default ./hearth.yaml).
  -u, --username NAME              The new account's user name (the localpart of its user ID).
  -p, --password PASSWORD          Its password.
  --admin                          Make the account a server admin.
${HELP_LINE}
`,
};

export const FEDERATION_CHECK: CommandUsage = {
  summary: 'Check whether federation with another server would work.',
  options: {
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean', default: false },
  },
  allowPositionals: true,
  usage: `Usage: hearth federation-check [--config FILE] [--json] SERVER_NAME

Checks, step by step, whether this server could federate with SERVER_NAME: finds it as this
server would (/.well-known/chat|matrix/server, SRV records, port 8448), connects with TLS and
checks its certificate for the expected name (sent as SNI), reads its /federation/v1/version and
its signing keys (/key/v2/server), and verifies the keys' signatures. Prints one line per step,
with what was found or why it failed, then a summary. Last, SERVER_NAME is asked for this
server's signing key (/key/v2/query), which it holds only if it could reach this server back (with
a configuration and its key file; otherwise not checked). The admin API answers the same report
as JSON:
GET /_ext/admin/v1/federation/check/SERVER_NAME.

Exit status: 0 when federation would work, 1 when a step failed, 2 for bad usage.

Options:
  -c, --config FILE                The configuration file (default ./hearth.yaml), read for
                                   global.protocol_name, federation_api.disable_tls_validation,
                                   global.server_name and global.private_key.
                                   Without this flag and without ./hearth.yaml, the defaults apply.
  --json                           Print the report as JSON instead.
${HELP_LINE}

Environment (for tests and diagnosis):
  HEARTH_DNS_SERVERS               Comma-separated DNS servers (IP or IP:PORT) to ask instead of
                                   the system's.
  HEARTH_EXTRA_CA                  A PEM file of certificates to trust besides the system's roots.
`,
};

export const GENERATE_CONFIG: CommandUsage = {
  summary: 'Print a complete commented configuration file.',
  options: { 'server-name': { type: 'string' }, 'data-dir': { type: 'string' } },
  usage: `Usage: hearth generate-config [--server-name NAME] [--data-dir DIR]

Prints a complete configuration file, every key with its explanation, to standard output.
The database, signing key, media and other files go under the data folder unless their own
keys are set.

Options:
  --server-name NAME               global.server_name (default localhost). It is part of every
                                   user ID and cannot be changed later.
  --data-dir DIR                   global.data_dir (default ./data, relative to the file's folder).
${HELP_LINE}
`,
};

export const GENERATE_KEYS: CommandUsage = {
  summary: 'Write a new Ed25519 signing key to a file, or print it.',
  options: { 'private-key': { type: 'string' } },
  usage: `Usage: hearth generate-keys [--private-key FILE]

Makes a new Ed25519 signing key. With --private-key, writes it to FILE (readable only by its
owner), never overwriting an existing file; otherwise prints it. The server also makes its key
on its first start.

Options:
  --private-key FILE               Where to write the key.
${HELP_LINE}
`,
};

export const GENERATE_APPSERVICE: CommandUsage = {
  summary: 'Write a new application service registration file, or print it.',
  options: {
    id: { type: 'string' },
    url: { type: 'string' },
    'sender-localpart': { type: 'string' },
    'user-regex': { type: 'string' },
    'alias-regex': { type: 'string' },
    out: { type: 'string' },
  },
  usage: `Usage: hearth generate-appservice --id ID --url URL --sender-localpart NAME --user-regex REGEX
                                  [--alias-regex REGEX] [--out FILE]

Makes the registration of an application service (a bridge or bot) with fresh random as_token and
hs_token, its user namespace (and alias namespace) claimed exclusively, and no rate limits. With
--out, writes it to FILE (readable only by its owner), never overwriting an existing file;
otherwise prints it. Give the file to the service and list it in app_service_config_files; the
server reads it when it starts.

Regexes are JavaScript regular expressions that must match a whole ID, server name included:
    --user-regex '@_bridge_.*:example\\.org' --alias-regex '#_bridge_.*:example\\.org'

Options:
  --id ID                          The service's unique id.
  --url URL                        Where the server sends the service its events (http or https).
  --sender-localpart NAME          The localpart of the service's own user.
  --user-regex REGEX               The user IDs the service manages.
  --alias-regex REGEX              The room aliases it manages.
  --out FILE                       Where to write the registration.
${HELP_LINE}
`,
};

export const VERSION: CommandUsage = {
  summary: 'Print the version (also --version, -V).',
  options: {},
  usage: `Usage: hearth version   (or hearth --version, hearth -V)

Prints the version of Hearth.
`,
};

export const HELP: CommandUsage = {
  summary: "Show this text, or a command's (also --help, -h).",
  options: {},
  usage: `Usage: hearth help [COMMAND]   (or hearth --help, hearth COMMAND --help)

Shows the list of commands, or the options of one.
`,
};
