// What a first start does on its own: writes a default configuration when there is none, and,
// while no account exists, prints a one-time registration token with which the first person
// registers and becomes the server's admin (open registration is off by default). The token
// admits nobody once any account exists, however that account was made.

import { existsSync, writeFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateConfig } from '../config/index.js';

export const DEFAULT_CONFIG_FILE = 'hearth.yaml';

/**
 * Writes a default configuration (server name `localhost`, data in ./data next to the file) to
 * `path` unless a file is there. Returns whether it wrote one.
 */
export function writeDefaultConfig(path: string): boolean {
  if (existsSync(path)) return false;
  writeFileSync(path, generateConfig({ serverName: 'localhost', dataDir: './data' }), { flag: 'wx' });
  return true;
}

/**
 * The command that runs this installation's `hearth` from any folder: this node binary and the CLI
 * script by absolute path. (`npx hearth` finds our command only inside the project's folder;
 * elsewhere it offers to install an unrelated npm package of that name.) Run from the TypeScript
 * sources, the CLI needs the tsx loader, also by absolute path.
 */
export function hearthCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  const extension = extname(here);
  const cli = join(dirname(here), '..', `cli${extension}`);
  if (extension === '.ts') return [process.execPath, '--import', import.meta.resolve('tsx'), cli];
  return [process.execPath, cli];
}

/** Words joined into one line that a POSIX shell splits back into the same words. */
export function shellLine(words: readonly string[]): string {
  return words.map((w) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`)).join(' ');
}

/** What the first-account announcement needs of the account service. */
export interface FirstAccountAccounts {
  /** A fresh single-use token that makes its account an admin; null once any account exists. */
  firstStartToken(): Promise<string | null>;
}

/**
 * When no account exists: a new single-use registration token that makes its account the admin
 * (earlier starts' unused ones stop working), and the notice to print. Undefined when accounts exist.
 */
export async function firstAccountNotice(
  accounts: FirstAccountAccounts,
  details: { serverName: string; baseUrl: string | undefined; configPath: string },
): Promise<string | undefined> {
  const token = await accounts.firstStartToken();
  if (token === null) return undefined;
  const rule = '='.repeat(78);
  return [
    rule,
    `No accounts exist on ${details.serverName} yet. Register the first account, which becomes the`,
    'server admin, with this one-time registration token (it works only while no account exists):',
    '',
    `    ${token}`,
    '',
    'Each start without accounts replaces it.',
    `In a client, use the homeserver ${details.baseUrl ?? details.serverName}, choose to create an account and`,
    'enter the token when asked. Or create an admin account from the command line, in any folder',
    '(it asks for the password):',
    `    ${shellLine([...hearthCommand(), 'register', '--config', details.configPath, '--username', 'NAME', '--admin'])}`,
    rule,
    '',
  ].join('\n');
}
