// Child processes of the `hearth` command for tests: output collected as it arrives, bounded waits
// for a line or for the exit, and a kill on cleanup.

import { type ChildProcess, spawn } from 'node:child_process';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;
/** tsx by absolute URL, so the command works from any working folder. */
const TSX = import.meta.resolve('tsx');

/**
 * The longest a test waits for a process to print a line or to exit. The waits end as soon as it
 * does; the bound only stops a process that never will, and is generous because starting one
 * through tsx takes a minute and more on a busy machine.
 */
export const PROCESS_WAIT_MS = 180_000;

export interface Hearth {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Waits until stdout matches; fails after `timeoutMs` or when the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Waits for the exit; fails after `timeoutMs`. */
  exited(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` to the process, or to its whole group when spawned with `group`. */
  signal(signal: NodeJS.Signals): void;
  kill(): void;
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Start a process group, so that kill() also ends the processes it starts (npm's children). */
  group?: boolean;
}

export function spawnProcess(command: string, args: string[], options: SpawnOptions = {}): Hearth {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group ?? false,
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const describe = () => `\n--- stdout:\n${out}\n--- stderr:\n${err}`;
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor(pattern, timeoutMs = PROCESS_WAIT_MS) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(out);
          if (m) {
            done();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms${describe()}`));
        }, timeoutMs);
        const onExit = () => {
          setImmediate(() => {
            const m = pattern.exec(out);
            done();
            if (m) resolve(m);
            else reject(new Error(`exited before printing ${pattern}${describe()}`));
          });
        };
        const done = () => {
          clearTimeout(timer);
          child.stdout!.off('data', check);
          child.off('exit', onExit);
        };
        child.stdout!.on('data', check);
        child.once('exit', onExit);
        check();
      });
    },
    async exited(timeoutMs = PROCESS_WAIT_MS) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not exit within ${timeoutMs} ms${describe()}`)), timeoutMs);
      });
      try {
        return await Promise.race([exit, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    signal(signal) {
      if (options.group && child.pid !== undefined) process.kill(-child.pid, signal);
      else child.kill(signal);
    },
    kill() {
      if (options.group && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // the group has already gone
        }
      } else if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The node arguments that run `hearth <args>` from the sources, from any folder. */
export function hearthArgs(args: string[]): string[] {
  return ['--import', TSX, CLI, ...args];
}

/** `hearth <args>` from the sources. */
export function spawnHearth(args: string[], options: SpawnOptions = {}): Hearth {
  return spawnProcess(process.execPath, hearthArgs(args), options);
}

/** The URL of the server's first plain (TLS) listener, from its startup notices. */
export const LISTENING = /^Listening on (http:\/\/\S+)$/m;
export const LISTENING_TLS = /^Listening on (https:\/\/\S+)$/m;

/** The first-account registration token in the startup notice. */
export const FIRST_ACCOUNT_TOKEN = /one-time registration token[^\n]*\n\n {4}([A-Za-z0-9._~-]+)\n/;
