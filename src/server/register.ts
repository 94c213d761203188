// `hearth register`: creates an account directly in the database, for the first admin or for
// operators scripting account creation. Registration settings do not apply; the username rules do.

import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.js';
import { accountService, openMigratedDatabase } from '../context.js';
import { UsageError } from './errors.js';
import { DEFAULT_CONFIG_FILE } from './first-run.js';

export async function registerCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      username: { type: 'string', short: 'u' },
      password: { type: 'string', short: 'p' },
      admin: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const missing = (['username', 'password'] as const).filter((name) => values[name] === undefined);
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((m) => `--${m}`).join(' and ')}`);
  const configPath = resolve(values.config ?? DEFAULT_CONFIG_FILE);
  const { config, warnings } = loadConfig(configPath);
  for (const w of warnings) process.stderr.write(`warning: ${configPath}: ${w.path}: ${w.message}\n`);

  const database = await openMigratedDatabase(config);
  try {
    const accounts = accountService({ config, db: database.db, serverName: config.global.server_name });
    const userId = await accounts.registerUser({
      localpart: values.username!,
      password: values.password!,
      admin: values.admin === true,
    });
    process.stdout.write(`Created ${values.admin ? 'admin ' : ''}account ${userId}\n`);
  } finally {
    await database.close();
  }
}
