#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=50
// The `hearth` command.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { generateConfig } from './config/index.js';
import { encodeSigningKeyFile, generateSigningKey } from './protocol/signing.js';
import { UsageError } from './server/errors.js';

const USAGE = `Usage: hearth <command> [options]

Commands:
  serve [--config FILE] [--http-bind-address HOST:PORT]
        [--https-bind-address HOST:PORT --tls-cert FILE --tls-key FILE]
      Run the server (default configuration ./hearth.yaml, written with defaults when absent).
      The flags override listen.http, listen.https, listen.tls_cert and listen.tls_key.
  register [--config FILE] --username NAME --password PASSWORD [--admin]
      Create an account directly in the database.
  generate-config [--server-name NAME] [--data-dir DIR]
      Print a complete commented configuration file (defaults: localhost, ./data).
  generate-keys [--private-key FILE]
      Write a new Ed25519 signing key to FILE (never overwriting one), or print it.
  help, --help, -h
      Show this text.
`;

function generateConfigCommand(args: string[]): void {
  const { values } = parseArgs({
    args,
    options: { 'server-name': { type: 'string' }, 'data-dir': { type: 'string' } },
    strict: true,
  });
  process.stdout.write(
    generateConfig({
      ...(values['server-name'] !== undefined ? { serverName: values['server-name'] } : {}),
      ...(values['data-dir'] !== undefined ? { dataDir: values['data-dir'] } : {}),
    }),
  );
}

function generateKeysCommand(args: string[]): void {
  const { values } = parseArgs({ args, options: { 'private-key': { type: 'string' } }, strict: true });
  const text = encodeSigningKeyFile(generateSigningKey());
  const file = values['private-key'];
  if (file === undefined) {
    process.stdout.write(text);
    return;
  }
  if (existsSync(file)) throw new UsageError(`${file} already exists; not overwriting a signing key`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`Wrote a new signing key to ${file}\n`);
}

const COMMANDS: Record<string, (args: string[]) => void | Promise<void>> = {
  // Loaded on demand: they bring in the whole server, which the other commands do not need.
  serve: async (args) => (await import('./server/serve.js')).serveCommand(args),
  register: async (args) => (await import('./server/register.js')).registerCommand(args),
  'generate-config': generateConfigCommand,
  'generate-keys': generateKeysCommand,
  help: () => void process.stdout.write(USAGE),
};

/** The usual help flags, as a first argument, mean the help command. */
const HELP_FLAGS = new Set(['--help', '-h']);

export async function main(argv: string[]): Promise<number> {
  const [given, ...rest] = argv;
  const name = given !== undefined && HELP_FLAGS.has(given) ? 'help' : given;
  const command = name === undefined ? undefined : COMMANDS[name];
  if (command === undefined || !Object.hasOwn(COMMANDS, name!)) {
    process.stderr.write(name === undefined ? USAGE : `Unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  try {
    await command(rest);
    return 0;
  } catch (err) {
    // The message alone: configuration and startup problems are the operator's to fix, and a
    // stack would bury them. parseArgs and our own checks report bad usage (exit 2).
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`hearth ${name}: ${(err as Error).message}\n`);
    return usage ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
