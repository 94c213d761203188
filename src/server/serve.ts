// `hearth serve`: loads the configuration (writing a default one on a first start without one),
// applies the command-line overrides, starts the server on every configured listener and stops it
// cleanly on SIGINT or SIGTERM.

import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, type Environment, type HearthConfig, envName, loadConfig } from '../config/index.js';
import { type HearthServer, createServer } from '../context.js';
import { StartupError, explainFileFailure } from './errors.js';
import { DEFAULT_CONFIG_FILE, firstAccountNotice, writeDefaultConfig } from './first-run.js';
import type { BoundListener } from './listeners.js';
import { SERVE } from './usage.js';

/** Command-line flags and the configuration keys they override. */
const FLAG_KEYS = {
  'http-bind-address': { key: 'listen.http', path: false },
  'https-bind-address': { key: 'listen.https', path: false },
  'tls-cert': { key: 'listen.tls_cert', path: true },
  'tls-key': { key: 'listen.tls_key', path: true },
} as const;
type Flag = keyof typeof FLAG_KEYS;

export interface ServeIo {
  /** Plain text for the operator (notices, the first-account token). */
  out(text: string): void;
  err(text: string): void;
  env: Environment;
  cwd: string;
}

const processIo: ServeIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
};

export interface ServeArgs {
  configPath: string;
  /** Whether --config was given (a missing file is then an error, not a first start). */
  explicitConfig: boolean;
  overrides: Partial<Record<Flag, string>>;
}

export function parseServeArgs(args: string[], cwd: string): ServeArgs {
  const { values } = parseArgs({ args, options: SERVE.options, strict: true });
  const overrides: Partial<Record<Flag, string>> = {};
  for (const flag of Object.keys(FLAG_KEYS) as Flag[]) {
    const value = values[flag];
    if (typeof value !== 'string') continue;
    overrides[flag] = FLAG_KEYS[flag].path && value !== '' ? resolve(cwd, value) : value;
  }
  const config = values['config'];
  return {
    configPath: resolve(cwd, typeof config === 'string' ? config : DEFAULT_CONFIG_FILE),
    explicitConfig: typeof config === 'string',
    overrides,
  };
}

/**
 * The configuration with the flags applied. Flags go through the same validation as the file (as
 * environment overrides, which they outrank); problems they cause name the flag.
 */
export function loadServeConfig(args: ServeArgs, io: ServeIo): HearthConfig {
  const env: Record<string, string | undefined> = { ...io.env };
  const byVariable = new Map<string, string>();
  for (const [flag, value] of Object.entries(args.overrides) as [Flag, string][]) {
    const variable = envName(FLAG_KEYS[flag].key);
    env[variable] = value;
    byVariable.set(variable, `--${flag}`);
  }
  try {
    const { config, warnings } = loadConfig(args.configPath, env);
    for (const w of warnings) io.err(`warning: ${args.configPath}: ${w.path}: ${w.message}\n`);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const issues = err.issues.map((issue) => {
      let path = issue.path;
      for (const [variable, flag] of byVariable) path = path.replace(`(from ${variable})`, `(from ${flag})`);
      return { ...issue, path };
    });
    throw new ConfigError(issues, args.configPath);
  }
}

/** The URL a client on this machine reaches a listener by. */
function localUrl(listener: BoundListener): string {
  const wildcard = listener.host === '0.0.0.0' || listener.host === '::';
  return wildcard ? `${listener.tls ? 'https' : 'http'}://localhost:${listener.port}` : listener.url;
}

export interface RunningServe {
  readonly server: HearthServer;
  /** Resolves once the server has stopped after a signal or stop(). */
  readonly stopped: Promise<void>;
  stop(): Promise<void>;
}

/** Starts the server as `hearth serve` does; does not install signal handlers. */
export async function startServe(args: ServeArgs, io: ServeIo = processIo): Promise<RunningServe> {
  const wroteDefault = !args.explicitConfig && writeDefaultConfig(args.configPath);
  const config = loadServeConfig(args, io);
  if (wroteDefault) {
    io.out(
      `No configuration found: wrote a default one to ${args.configPath} ` +
        `(server name ${config.global.server_name}, data in ${config.global.data_dir}).\n`,
    );
  }
  const failed = (err: unknown) => {
    const reason = explainFileFailure(err, config.global.data_dir) ?? (err instanceof Error ? err.message : String(err));
    return new StartupError(`cannot start: ${reason}`, { cause: err });
  };
  let server: HearthServer;
  try {
    server = await createServer(config);
  } catch (err) {
    throw failed(err);
  }
  try {
    const listeners = await server.listen();
    for (const l of listeners) io.out(`Listening on ${l.url}\n`);
    if (server.createdSigningKey) io.out(`Created a new signing key in ${config.global.private_key}.\n`);
    const notice = await firstAccountNotice(server.services.accounts, {
      serverName: config.global.server_name,
      baseUrl: listeners[0] ? localUrl(listeners[0]) : undefined,
      configPath: args.configPath,
    });
    if (notice !== undefined) io.out(notice);
  } catch (err) {
    await server.close().catch(() => undefined);
    throw failed(err);
  }
  let stopping: Promise<void> | undefined;
  let markStopped!: () => void;
  const stopped = new Promise<void>((r) => (markStopped = r));
  const stop = () => (stopping ??= server.close().finally(markStopped));
  return { server, stopped, stop };
}

/** A signal repeated within this long of the first is the same request to stop. */
const REPEAT_WINDOW_MS = 1000;

/** `hearth serve`: runs until SIGINT or SIGTERM; a second signal (a second later or more) exits at once. */
export async function serveCommand(argv: string[]): Promise<void> {
  const args = parseServeArgs(argv, process.cwd());
  const running = await startServe(args);
  let stopping: Promise<void> | undefined;
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping !== undefined) {
      // One Ctrl-C can arrive twice at once: to the terminal's foreground group, and forwarded by
      // a supervisor in that group (npm start). Only a later one means "now".
      if (Date.now() - firstSignalAt < REPEAT_WINDOW_MS) return;
      process.stderr.write(`${signal} again: exiting without waiting\n`);
      process.exit(1);
    }
    firstSignalAt = Date.now();
    running.server.app.log.info(`${signal} received: shutting down`);
    stopping = running.stop();
    stopping.catch(() => undefined); // reported below, once stopped
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await running.stopped;
    await stopping; // a failure to close cleanly becomes the command's failure
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // Everything is closed; should a stray timer keep the process alive, do not wait for it.
    setTimeout(() => process.exit(), 2000).unref();
  }
}
