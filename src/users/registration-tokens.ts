// Registration tokens (`m.login.registration_token`): pre-shared tokens that admit a limited
// number of registrations, optionally until a time, optionally making the new account an admin.
// A use is counted only when a registration completes (see storage's consumeRegistrationToken).
// Admin-making tokens exist only as the first-start token, so they admit nobody once any account
// exists: otherwise a token printed at first start would later mint an admin.

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
  updateRegistrationToken,
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
  /** Length of a generated token (default 16). */
  readonly length?: number;
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

function generateToken(length = GENERATED_LENGTH): string {
  let s = '';
  for (let i = 0; i < length; i++) s += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)];
  return s;
}

export function isUsable(token: RegistrationToken, now: number): boolean {
  return (token.usesAllowed === null || token.completed < token.usesAllowed) && (token.expiryTime === null || token.expiryTime > now);
}

/** How many accounts would make the first-start token stale (non-guest, deactivated included). */
export type AccountCounter = (db: Kysely<Schema>) => Promise<number>;

export class RegistrationTokens {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly now: () => number,
    private readonly countAccounts: AccountCounter,
  ) {}

  async create(spec: NewRegistrationToken): Promise<RegistrationToken> {
    if (spec.usesAllowed !== null && (!Number.isSafeInteger(spec.usesAllowed) || spec.usesAllowed < 0)) {
      throw HearthError.invalidParam('usesAllowed must be a non-negative integer or null');
    }
    if (spec.expiryTime !== null && (!Number.isSafeInteger(spec.expiryTime) || spec.expiryTime < 0)) {
      throw HearthError.invalidParam('expiryTime must be a timestamp in milliseconds or null');
    }
    if (spec.length !== undefined && (!Number.isSafeInteger(spec.length) || spec.length < 1 || spec.length > 64)) {
      throw HearthError.invalidParam('length must be an integer from 1 to 64');
    }
    if (spec.token !== undefined && !TOKEN_GRAMMAR.test(spec.token)) {
      throw HearthError.invalidParam('A registration token is 1 to 64 characters of A-Z, a-z, 0-9, ".", "_", "~" and "-"');
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const row: RegistrationTokenRow = {
        token: spec.token ?? generateToken(spec.length),
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

  /** Changes the token's limits; undefined when there is no such token. */
  async update(token: string, change: { usesAllowed?: number | null; expiryTime?: number | null }): Promise<RegistrationToken | undefined> {
    const row = await updateRegistrationToken(this.db, token, {
      ...(change.usesAllowed !== undefined ? { uses_allowed: change.usesAllowed } : {}),
      ...(change.expiryTime !== undefined ? { expiry_time: change.expiryTime } : {}),
    });
    return row && toToken(row);
  }

  delete(token: string): Promise<boolean> {
    return deleteRegistrationToken(this.db, token);
  }

  /** Whether the token would admit a registration now (the `/validity` endpoint). */
  async isValid(token: string): Promise<boolean> {
    const found = await this.get(token);
    return found !== undefined && isUsable(found, this.now()) && (!found.makesAdmin || (await this.countAccounts(this.db)) === 0);
  }

  async anyUsable(): Promise<boolean> {
    if (!(await anyUsableRegistrationToken(this.db, this.now()))) return false;
    if ((await this.countAccounts(this.db)) === 0) return true;
    // Accounts exist, so admin-making tokens do not count; tokens are few enough to look at each.
    const now = this.now();
    return (await this.list()).some((t) => !t.makesAdmin && isUsable(t, now));
  }

  /**
   * Counts a use inside the registering transaction, after the new account's row was inserted;
   * undefined when the token no longer admits one (an admin-making token once another account exists).
   */
  async consume(trx: Kysely<Schema>, token: string): Promise<RegistrationToken | undefined> {
    const row = await consumeRegistrationToken(trx, token, this.now());
    if (!row) return undefined;
    const used = toToken(row);
    if (used.makesAdmin && (await this.countAccounts(trx)) > 1) return undefined;
    return used;
  }

  /**
   * A fresh single-use token that makes its account an admin, for a server with no accounts yet
   * (null once any account exists). Unused admin tokens from earlier starts stop working.
   */
  async firstStartToken(): Promise<string | null> {
    if ((await this.countAccounts(this.db)) > 0) return null;
    await deleteUnusedAdminTokens(this.db);
    const created = await this.create({ usesAllowed: 1, expiryTime: null, makesAdmin: true });
    return created.token;
  }

  /**
   * The `m.login.registration_token` stage: a usable token; kept in the session for the final use
   * (where it is checked again, as accounts may have appeared meanwhile).
   */
  stage(): StageChecker {
    return async (auth) => {
      const token = auth['token'];
      if (typeof token !== 'string') throw new StageFailure('M_MISSING_PARAM', 'Missing registration token');
      if (!(await this.isValid(token))) throw new StageFailure('M_UNAUTHORIZED', 'Invalid registration token');
      return { registration_token: token };
    };
  }
}
