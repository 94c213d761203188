#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 --heap-growing-percent=50
// The `hearth` command.

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { generateConfig } from './config/index.js';
import { encodeSigningKeyFile, generateSigningKey } from './protocol/signing.js';
import { InterruptedError, UsageError } from './server/errors.js';
import {
  type CommandUsage,
  FEDERATION_CHECK,
  GENERATE_APPSERVICE,
  GENERATE_CONFIG,
  GENERATE_KEYS,
  HELP,
  REGISTER,
  SERVE,
  VERSION,
} from './server/usage.js';
import { packageVersion } from './server/package-version.js';

function generateConfigCommand(args: string[]): void {
  const { values } = parseArgs({ args, options: GENERATE_CONFIG.options, strict: true });
  const serverName = values['server-name'];
  const dataDir = values['data-dir'];
  process.stdout.write(
    generateConfig({
      ...(typeof serverName === 'string' ? { serverName } : {}),
      ...(typeof dataDir === 'string' ? { dataDir } : {}),
    }),
  );
}

function generateKeysCommand(args: string[]): void {
  const { values } = parseArgs({ args, options: GENERATE_KEYS.options, strict: true });
  const text = encodeSigningKeyFile(generateSigningKey());
  const file = values['private-key'];
  if (typeof file !== 'string') {
    process.stdout.write(text);
    return;
  }
  if (existsSync(file)) throw new UsageError(`${file} already exists; not overwriting a signing key`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`Wrote a new signing key to ${file}\n`);
}

interface Command extends CommandUsage {
  /** Resolves to the exit status, or to nothing for 0. */
  run(args: string[]): void | number | Promise<void | number>;
}

const COMMANDS: Record<string, Command> = {
  // Loaded on demand: they bring in the whole server, which the other commands do not need.
  serve: { ...SERVE, run: async (args) => (await import('./server/serve.js')).serveCommand(args) },
  register: { ...REGISTER, run: async (args) => (await import('./server/register.js')).registerCommand(args) },
  'federation-check': {
    ...FEDERATION_CHECK,
    run: async (args) => (await import('./server/federation-check-command.js')).federationCheckCommand(args),
  },
  'generate-config': { ...GENERATE_CONFIG, run: generateConfigCommand },
  'generate-keys': { ...GENERATE_KEYS, run: generateKeysCommand },
  'generate-appservice': {
    ...GENERATE_APPSERVICE,
    run: async (args) => (await import('./server/generate-appservice-command.js')).generateAppserviceCommand(args),
  },
  version: { ...VERSION, run: () => void process.stdout.write(`${packageVersion()}\n`) },
  help: { ...HELP, run: () => undefined }, // answered in main()
};

const NAME_WIDTH = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2;

const OVERVIEW = [
  'Usage: hearth <command> [options]',
  '',
  'Commands:',
  ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(NAME_WIDTH)}${c.summary}`),
  '',
  'Run `hearth <command> --help` for the options of a command.',
  '',
].join('\n');

/** Flags that stand for a command when they come first. */
const COMMAND_FLAGS: Record<string, string> = { '--help': 'help', '-h': 'help', '--version': 'version', '-V': 'version' };

function lookup(name: string): Command | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}

export async function main(argv: string[]): Promise<number> {
  const [given, ...rest] = argv;
  if (given === undefined) {
    process.stderr.write(OVERVIEW);
    return 2;
  }
  const name = COMMAND_FLAGS[given] ?? given;
  const command = lookup(name);
  if (command === undefined) {
    process.stderr.write(`Unknown command "${name}"\n\n${OVERVIEW}`);
    return 2;
  }
  if (name === 'help') {
    const topic = rest[0];
    if (topic === undefined) {
      process.stdout.write(OVERVIEW);
      return 0;
    }
    const about = topic === '--help' || topic === '-h' ? HELP : lookup(topic);
    if (about === undefined || rest.length > 1) {
      process.stderr.write(`Unknown command "${rest.join(' ')}"\n\n${OVERVIEW}`);
      return 2;
    }
    process.stdout.write(about.usage);
    return 0;
  }

  // Bad usage and --help are answered here, from the option table, before a command loads.
  let help = false;
  try {
    const { values } = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: command.allowPositionals === true,
    });
    help = values['help'] === true;
  } catch (err) {
    process.stderr.write(`hearth ${name}: ${(err as Error).message}\n\n${command.usage}`);
    return 2;
  }
  if (help) {
    process.stdout.write(command.usage);
    return 0;
  }
  try {
    return (await command.run(rest)) ?? 0;
  } catch (err) {
    // The message alone: configuration and startup problems are the operator's to fix, and a
    // stack would bury them.
    process.stderr.write(`hearth ${name}: ${(err as Error).message}\n`);
    if (err instanceof InterruptedError) return 130;
    if (err instanceof UsageError) {
      process.stderr.write(`Run \`hearth ${name} --help\` for its options.\n`);
      return 2;
    }
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
