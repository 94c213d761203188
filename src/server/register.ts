// `hearth register`: creates an account directly in the database, for the first admin or for
// operators scripting account creation. Registration settings do not apply; the username rules do.
// Without --password, the password comes from a prompt that does not echo (on a terminal) or from
// the first line of standard input (in scripts), so it need not appear in `ps` or shell history.

import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ReadStream } from 'node:tty';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.js';
import { accountService, openMigratedDatabase } from '../context.js';
import { InterruptedError, UsageError } from './errors.js';
import { DEFAULT_CONFIG_FILE } from './first-run.js';
import { REGISTER } from './usage.js';

export interface PasswordIo {
  readonly stdin: NodeJS.ReadStream;
  /** Where prompts go: standard error, so that standard output stays the command's result. */
  readonly prompts: NodeJS.WritableStream;
}

const processIo: PasswordIo = { stdin: process.stdin, prompts: process.stderr };

export async function registerCommand(argv: string[], io: PasswordIo = processIo): Promise<void> {
  const { values } = parseArgs({ args: argv, options: REGISTER.options, strict: true });
  const username = values['username'];
  if (typeof username !== 'string') throw new UsageError('missing --username');
  const configPath = resolve(typeof values['config'] === 'string' ? values['config'] : DEFAULT_CONFIG_FILE);
  // The configuration is checked before asking for anything.
  const { config, warnings } = loadConfig(configPath);
  for (const w of warnings) process.stderr.write(`warning: ${configPath}: ${w.path}: ${w.message}\n`);
  const given = values['password'];
  const password = typeof given === 'string' ? given : await readPassword(io);
  if (password === '') throw new UsageError('the password is empty');
  const admin = values['admin'] === true;

  const database = await openMigratedDatabase(config);
  try {
    const accounts = accountService({ config, db: database.db, serverName: config.global.server_name });
    const userId = await accounts.registerUser({ localpart: username, password, admin });
    process.stdout.write(`Created ${admin ? 'admin ' : ''}account ${userId}\n`);
  } finally {
    await database.close();
  }
}

/** The password from a terminal prompt (asked twice) or from standard input's first line. */
async function readPassword(io: PasswordIo): Promise<string> {
  if (io.stdin.isTTY) {
    const tty = io.stdin as ReadStream;
    const first = await promptHidden(tty, io.prompts, 'Password: ', '');
    const second = await promptHidden(tty, io.prompts, 'Confirm password: ', first.rest);
    if (first.line !== second.line) throw new UsageError('the passwords do not match');
    return first.line;
  }
  const line = await firstLine(io.stdin);
  if (line === undefined) {
    throw new UsageError('missing --password, and standard input held no password (give it on its first line)');
  }
  return line;
}

/** The first line of a stream without its line ending; undefined when the stream ends empty. */
async function firstLine(input: NodeJS.ReadStream): Promise<string | undefined> {
  const lines = createInterface({ input, crlfDelay: Infinity, terminal: false });
  try {
    for await (const line of lines) return line;
    return undefined;
  } finally {
    lines.close();
    // A writer that keeps its end open must not keep this process alive.
    input.destroy();
  }
}

/**
 * Reads one line from a terminal in raw mode, so that nothing typed is shown. `pending` is what
 * was typed ahead of this prompt; what came after the line is returned as `rest`.
 */
function promptHidden(
  tty: ReadStream,
  out: NodeJS.WritableStream,
  question: string,
  pending: string,
): Promise<{ line: string; rest: string }> {
  return new Promise((resolveLine, reject) => {
    let line = '';
    let done = false;
    const finish = (rest: string, error?: Error) => {
      done = true;
      tty.off('data', onData);
      tty.setRawMode(false);
      tty.pause();
      out.write('\n');
      if (error) reject(error);
      else resolveLine({ line, rest });
    };
    const onData = (chunk: string) => {
      const chars = Array.from(chunk);
      for (let i = 0; i < chars.length && !done; i++) {
        const ch = chars[i]!;
        const rest = () => chars.slice(i + 1).join('');
        if (ch === '\r' || ch === '\n') finish(rest());
        else if (ch === '\u0003') finish('', new InterruptedError('interrupted'));
        else if (ch === '\u0004') finish(rest(), line === '' ? new UsageError('no password given') : undefined);
        else if (ch === '\u007f' || ch === '\b') line = Array.from(line).slice(0, -1).join('');
        else if (ch === '\u0015') line = ''; // Ctrl-U: start over
        else if (ch >= ' ') line += ch;
      }
    };
    // Echo goes off before the question shows, so that nothing typed in answer is ever shown.
    tty.setEncoding('utf8');
    tty.setRawMode(true);
    out.write(question);
    onData(pending);
    if (done) return;
    tty.on('data', onData);
    tty.resume();
  });
}
