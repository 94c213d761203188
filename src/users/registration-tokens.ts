// Registration tokens (`m.login.registration_token`): pre-shared tokens that admit a limited
// number of registrations, optionally until a time, optionally making the new account an admin.
// A use is counted only when a registration completes (see storage's consumeRegistrationToken).

import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import {
  anyUsableRegistrationToken,
  consumeRegistrationToken,
  deleteRegistrationToken,
  deleteUnusedAdminTokens,
  findRegistrationToken,
  insertRegistrationToken,
  listRegistrationTokens,
  type RegistrationTokenRow,
} from '../storage/accounts/registration-tokens.js';
import { StageFailure, type StageChecker } from './uia.js';

/** The spec's opaque identifier grammar, at most 64 characters. */
const TOKEN_GRAMMAR = /^[A-Za-z0-9._~-]{1,64}$/;
const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const GENERATED_LENGTH = 16;

export interface NewRegistrationToken {
  /** The token itself; generated when absent. */
  readonly token?: string;
  /** Registrations it admits; null for unlimited. */
  readonly usesAllowed: number | null;
  /** Milliseconds since the epoch after which it stops working; null for never. */
  readonly expiryTime: number | null;
  /** Whether accounts registered with it become server admins. */
  readonly makesAdmin?: boolean;
}

export interface RegistrationToken {
  readonly token: string;
  readonly usesAllowed: number | null;
  readonly completed: number;
  readonly expiryTime: number | null;
  readonly makesAdmin: boolean;
  readonly createdTs: number;
}

function toToken(row: RegistrationTokenRow): RegistrationToken {
  return {
    token: row.token,
    usesAllowed: row.uses_allowed,
    completed: row.completed,
    expiryTime: row.expiry_time,
    makesAdmin: row.makes_admin === 1,
    createdTs: row.created_ts,
  };
}

function generateToken(): string {
  let s = '';
  for (let i = 0; i < GENERATED_LENGTH; i++) s += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)];
  return s;
}

export function isUsable(token: RegistrationToken, now: number): boolean {
  return (token.usesAllowed === null || token.completed < token.usesAllowed) && (token.expiryTime === null || token.expiryTime > now);
}

export class RegistrationTokens {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly now: () => number,
  ) {}

  async create(spec: NewRegistrationToken): Promise<RegistrationToken> {
    if (spec.usesAllowed !== null && (!Number.isSafeInteger(spec.usesAllowed) || spec.usesAllowed < 0)) {
      throw HearthError.invalidParam('usesAllowed must be a non-negative integer or null');
    }
    if (spec.expiryTime !== null && (!Number.isSafeInteger(spec.expiryTime) || spec.expiryTime < 0)) {
      throw HearthError.invalidParam('expiryTime must be a timestamp in milliseconds or null');
    }
    if (spec.token !== undefined && !TOKEN_GRAMMAR.test(spec.token)) {
      throw HearthError.invalidParam('A registration token is 1 to 64 characters of A-Z, a-z, 0-9, ".", "_", "~" and "-"');
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const row: RegistrationTokenRow = {
        token: spec.token ?? generateToken(),
        uses_allowed: spec.usesAllowed,
        completed: 0,
        expiry_time: spec.expiryTime,
        makes_admin: spec.makesAdmin ? 1 : 0,
        created_ts: this.now(),
      };
      if (await insertRegistrationToken(this.db, row)) return toToken(row);
      if (spec.token !== undefined) throw HearthError.invalidParam(`Registration token ${spec.token} already exists`);
    }
    throw HearthError.unknown('Could not generate a unique registration token');
  }

  async get(token: string): Promise<RegistrationToken | undefined> {
    const row = await findRegistrationToken(this.db, token);
    return row && toToken(row);
  }

  async list(): Promise<RegistrationToken[]> {
    return (await listRegistrationTokens(this.db)).map(toToken);
  }

  delete(token: string): Promise<boolean> {
    return deleteRegistrationToken(this.db, token);
  }

  /** Whether the token would admit a registration now (the `/validity` endpoint). */
  async isValid(token: string): Promise<boolean> {
    const found = await this.get(token);
    return found !== undefined && isUsable(found, this.now());
  }

  anyUsable(): Promise<boolean> {
    return anyUsableRegistrationToken(this.db, this.now());
  }

  /** Counts a use inside the registering transaction; undefined when the token no longer admits one. */
  async consume(trx: Kysely<Schema>, token: string): Promise<RegistrationToken | undefined> {
    const row = await consumeRegistrationToken(trx, token, this.now());
    return row && toToken(row);
  }

  /**
   * A fresh single-use token that makes its account an admin, for a server with no accounts yet
   * (null once any account exists). Unused admin tokens from earlier starts stop working.
   */
  async firstStartToken(countUsers: () => Promise<number>): Promise<string | null> {
    if ((await countUsers()) > 0) return null;
    await deleteUnusedAdminTokens(this.db);
    const created = await this.create({ usesAllowed: 1, expiryTime: null, makesAdmin: true });
    return created.token;
  }

  /** The `m.login.registration_token` stage: a usable token; kept in the session for the final use. */
  stage(): StageChecker {
    return async (auth) => {
      const token = auth['token'];
      if (typeof token !== 'string') throw new StageFailure('M_MISSING_PARAM', 'Missing registration token');
      if (!(await this.isValid(token))) throw new StageFailure('M_UNAUTHORIZED', 'Invalid registration token');
      return { registration_token: token };
    };
  }
}
