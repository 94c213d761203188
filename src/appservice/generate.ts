// A new registration file with fresh tokens, for `hearth generate-appservice`.

import { randomBytes } from 'node:crypto';
import { Document } from 'yaml';
import { ConfigError } from '../config/index.js';
import { readRegistration } from './registration.js';

export interface NewRegistration {
  readonly id: string;
  readonly url: string;
  readonly senderLocalpart: string;
  /** Claimed exclusively. */
  readonly userRegex: string;
  /** Claimed exclusively, when given. */
  readonly aliasRegex?: string;
}

/**
 * The YAML text of a registration for `options`, with new random tokens and no rate limits.
 * Throws ConfigError, at the fields of the file (`url`, `namespaces.users[0].regex`), for options
 * that would not load.
 */
export function newRegistrationYaml(options: NewRegistration): string {
  const exclusive = (regex: string) => ({ exclusive: true, regex });
  const doc = new Document({
    id: options.id,
    url: options.url,
    as_token: newToken(),
    hs_token: newToken(),
    sender_localpart: options.senderLocalpart,
    rate_limited: false,
    namespaces: {
      users: [exclusive(options.userRegex)],
      aliases: options.aliasRegex === undefined ? [] : [exclusive(options.aliasRegex)],
      rooms: [],
    },
  });
  doc.commentBefore =
    ' Application service registration. List this file in app_service_config_files of the\n' +
    ' server and give it to the service; both tokens are secrets.';
  const text = doc.toString({ lineWidth: 0 });
  // Checked as the server will read it, so a file that would not load is never written.
  const { issues } = readRegistration(text);
  if (issues.length > 0) throw new ConfigError(issues);
  return text;
}

/** 32 random bytes, URL-safe: tokens travel in headers and query strings. */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}
