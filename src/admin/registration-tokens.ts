// The admin API's registration tokens, shaped as the reference server's: listing (optionally only
// the valid or invalid ones), reading, creating, changing limits and deleting.

import { HearthError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/json.js';
import type { AccountService } from '../users/accounts.js';
import { isUsable, type RegistrationToken } from '../users/registration-tokens.js';

function tokenJson(t: RegistrationToken): JsonObject {
  // Uses are counted when a registration completes; none is ever held pending.
  return { token: t.token, uses_allowed: t.usesAllowed, pending: 0, completed: t.completed, expiry_time: t.expiryTime };
}

/** A non-negative integer or null; undefined when absent. */
function limitField(body: JsonObject, key: string): number | null | undefined {
  const v = body[key];
  if (v === undefined || v === null) return v;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw HearthError.invalidParam(`${key} must be a non-negative integer or null`);
  return v;
}

export class AdminRegistrationTokens {
  constructor(private readonly deps: { readonly accounts: AccountService; readonly now?: () => number }) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  async list(valid: boolean | undefined): Promise<JsonObject> {
    const now = this.now();
    const tokens = (await this.deps.accounts.listRegistrationTokens()).filter((t) => valid === undefined || isUsable(t, now) === valid);
    return { registration_tokens: tokens.map(tokenJson) };
  }

  async get(token: string): Promise<JsonObject> {
    const found = await this.deps.accounts.getRegistrationToken(token);
    if (!found) throw HearthError.notFound('No such registration token: ' + token);
    return tokenJson(found);
  }

  async create(body: JsonObject): Promise<JsonObject> {
    const token = body['token'];
    if (token !== undefined && typeof token !== 'string') throw HearthError.invalidParam('token must be a string');
    const length = body['length'];
    if (length !== undefined && (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 1 || length > 64)) {
      throw HearthError.invalidParam('length must be an integer from 1 to 64');
    }
    const usesAllowed = limitField(body, 'uses_allowed') ?? null;
    const expiryTime = this.expiry(body) ?? null;
    const created = await this.deps.accounts.createRegistrationToken({
      ...(token !== undefined ? { token } : { length: length ?? 16 }),
      usesAllowed,
      expiryTime,
    });
    return tokenJson(created);
  }

  async update(token: string, body: JsonObject): Promise<JsonObject> {
    const usesAllowed = limitField(body, 'uses_allowed');
    const expiryTime = this.expiry(body);
    const updated = await this.deps.accounts.updateRegistrationToken(token, {
      ...('uses_allowed' in body ? { usesAllowed: usesAllowed ?? null } : {}),
      ...('expiry_time' in body ? { expiryTime: expiryTime ?? null } : {}),
    });
    if (!updated) throw HearthError.notFound('No such registration token: ' + token);
    return tokenJson(updated);
  }

  async delete(token: string): Promise<void> {
    if (!(await this.deps.accounts.deleteRegistrationToken(token))) throw HearthError.notFound('No such registration token: ' + token);
  }

  private expiry(body: JsonObject): number | null | undefined {
    const v = body['expiry_time'];
    if (v === undefined || v === null) return v;
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw HearthError.invalidParam('expiry_time must be an integer or null');
    if (v < this.now()) throw HearthError.invalidParam('expiry_time cannot be in the past');
    return v;
  }
}
