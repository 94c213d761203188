// OpenID tokens (client API, "OpenID"): a user asks for a short-lived token and hands it to a
// third party (an integration manager, a widget), which asks this server over federation whose
// it is (GET /openid/userinfo). They are kept apart from access tokens and never authenticate
// client requests.

import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import { deleteExpiredOpenIdTokens, insertOpenIdToken, openIdTokenOwner } from '../storage/accounts/openid-tokens.js';
import { hashAccessToken } from './tokens.js';

/** How long a token lasts (Synapse's hour). */
export const OPENID_TOKEN_LIFETIME_MS = 3600_000;
const TOKEN_PREFIX = 'hto_';

export interface OpenIdServiceDeps {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly now?: () => number;
}

export interface OpenIdToken {
  access_token: string;
  token_type: 'Bearer';
  matrix_server_name: string;
  expires_in: number;
}

export class OpenIdService {
  private readonly now: () => number;

  constructor(private readonly deps: OpenIdServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** POST /user/{userId}/openid/request_token: only for oneself (403). */
  async requestToken(requesterId: string, userId: string): Promise<OpenIdToken> {
    if (requesterId !== userId) throw HearthError.forbidden('Cannot request tokens for other users.');
    const now = this.now();
    // Expired tokens are swept as new ones are made: the table holds about an hour's worth.
    await deleteExpiredOpenIdTokens(this.deps.db, now);
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    await insertOpenIdToken(this.deps.db, hashAccessToken(token), userId, now + OPENID_TOKEN_LIFETIME_MS);
    return {
      access_token: token,
      token_type: 'Bearer',
      matrix_server_name: this.deps.serverName,
      expires_in: OPENID_TOKEN_LIFETIME_MS / 1000,
    };
  }

  /** GET /openid/userinfo (federation): the token's user, or 401. */
  async userInfo(token: string | undefined): Promise<{ sub: string }> {
    if (token === undefined || token === '') throw new HearthError(401, 'M_MISSING_TOKEN', 'Access Token required');
    const userId = await openIdTokenOwner(this.deps.db, hashAccessToken(token), this.now());
    if (userId === undefined) throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Access Token unknown or expired');
    return { sub: userId };
  }
}
