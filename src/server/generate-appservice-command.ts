// `hearth generate-appservice`: a new application service registration, printed or written to a
// file that is never overwritten (it holds the service's tokens).

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { newRegistrationYaml } from '../appservice/generate.js';
import { ConfigError } from '../config/index.js';
import { UsageError } from './errors.js';
import { GENERATE_APPSERVICE } from './usage.js';

/** The flag each field of the file comes from, so a problem names what to change. */
const FLAG_OF_FIELD: Record<string, string> = {
  id: '--id',
  url: '--url',
  sender_localpart: '--sender-localpart',
  'namespaces.users[0].regex': '--user-regex',
  'namespaces.aliases[0].regex': '--alias-regex',
};

export function generateAppserviceCommand(args: string[]): void {
  const { values } = parseArgs({ args, options: GENERATE_APPSERVICE.options, strict: true });
  const required = (flag: string): string => {
    const value = values[flag];
    if (typeof value !== 'string') throw new UsageError(`missing --${flag}`);
    return value;
  };
  const alias = values['alias-regex'];
  let text: string;
  try {
    text = newRegistrationYaml({
      id: required('id'),
      url: required('url'),
      senderLocalpart: required('sender-localpart'),
      userRegex: required('user-regex'),
      ...(typeof alias === 'string' ? { aliasRegex: alias } : {}),
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new UsageError(err.issues.map((i) => `${FLAG_OF_FIELD[i.path] ?? i.path}: ${i.message}`).join('\n  '));
  }
  const file = values['out'];
  if (typeof file !== 'string') {
    process.stdout.write(text);
    return;
  }
  if (existsSync(file)) throw new UsageError(`${file} already exists; not overwriting a registration`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`Wrote a new application service registration to ${file}\n`);
}
