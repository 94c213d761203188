// The admin API's user management, shaped as the reference server's: listing and reading accounts,
// creating and modifying them (password, profile, admin flag, deactivation, third-party and
// external identifiers, account type), devices, joined rooms, logging in as a user, and per-user
// rate limits. Only server admins reach it (the routes' auth); it works on local users only.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { parseUserId, serverNameOf } from '../protocol/ids.js';
import type { JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { findUser } from '../storage/accounts/users.js';
import {
  externalIdOwner,
  listUsersPage,
  replaceExternalIds,
  replaceThreepids,
  selectExternalIds,
  selectThreepids,
  selectUserType,
  setUserType,
  threepidOwner,
  type UserListOrder,
} from '../storage/accounts/admin-users.js';
import { selectProfile } from '../storage/user-data/profiles.js';
import { isErased } from '../storage/accounts/erased-users.js';
import { listDevices, findDevice, type DeviceRow } from '../storage/accounts/devices.js';
import type { AccountService } from '../users/accounts.js';
import { listPushers } from '../storage/accounts/pushers.js';
import { pusherJson } from '../users/pushers.js';
import type { ProfileService } from '../users/profiles.js';
import type { RateLimitOverrides } from './rate-limit-overrides.js';

/** The account types the reference server knows. */
const USER_TYPES = new Set(['support', 'bot']);
const MAX_PASSWORD_LENGTH = 512;
const ORDERS: ReadonlySet<string> = new Set<UserListOrder>(['name', 'is_guest', 'admin', 'user_type', 'deactivated', 'displayname', 'avatar_url', 'creation_ts']);

export interface AdminUsersDeps {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly accounts: AccountService;
  readonly profiles: ProfileService;
  readonly joinedRooms: (userId: string) => Promise<string[]>;
  readonly rateLimits: RateLimitOverrides;
  readonly now?: () => number;
}

export interface UserListQuery {
  readonly from: number;
  readonly limit: number;
  readonly guests: boolean;
  readonly deactivated: boolean;
  readonly admins: boolean | undefined;
  readonly userId: string | undefined;
  readonly name: string | undefined;
  readonly orderBy: string | undefined;
  readonly dir: string | undefined;
}

/** Who is asking: a server admin. */
export interface AdminActor {
  readonly userId: string;
}

export class AdminUserService {
  private readonly now: () => number;

  constructor(private readonly deps: AdminUsersDeps) {
    this.now = deps.now ?? Date.now;
  }

  // --- Reading ------------------------------------------------------------------------------

  async list(q: UserListQuery): Promise<JsonObject> {
    const order = q.orderBy ?? 'name';
    if (!ORDERS.has(order)) throw HearthError.invalidParam('Unknown value for order_by');
    if (q.dir !== undefined && q.dir !== 'f' && q.dir !== 'b') throw HearthError.invalidParam("Unknown direction: dir must be 'f' or 'b'");
    const { rows, total } = await listUsersPage(
      this.deps.db,
      { guests: q.guests, deactivated: q.deactivated, admins: q.admins, userId: q.userId, name: q.name },
      order as UserListOrder,
      q.dir === 'b',
      q.from,
      q.limit,
    );
    const users = rows.map((r) => ({
      name: r.user_id,
      user_type: r.user_type,
      is_guest: r.is_guest === 1,
      admin: r.is_admin === 1,
      deactivated: r.deactivated === 1,
      shadow_banned: false,
      displayname: r.displayname,
      avatar_url: r.avatar_url,
      creation_ts: r.created_ts,
      approved: true,
      erased: false,
      last_seen_ts: null,
      locked: false,
    }));
    return { users, total, ...(rows.length > 0 && q.from + rows.length < total ? { next_token: String(q.from + rows.length) } : {}) };
  }

  /** The reference server's user object; 404 for an unknown user. */
  async get(target: string): Promise<JsonObject> {
    const userId = this.localUser(target);
    const user = await findUser(this.deps.db, userId);
    if (!user) throw HearthError.notFound('User not found');
    const profile = await selectProfile(this.deps.db, userId);
    const devices = await listDevices(this.deps.db, userId);
    const lastSeen = devices.reduce<number | null>((m, d) => (d.last_seen_ts === null ? m : Math.max(m ?? 0, Number(d.last_seen_ts))), null);
    return {
      name: userId,
      displayname: profile?.displayname ?? null,
      avatar_url: profile?.avatarUrl ?? null,
      threepids: (await selectThreepids(this.deps.db, userId)).map((t) => ({ ...t })),
      external_ids: (await selectExternalIds(this.deps.db, userId)).map((e) => ({ ...e })),
      admin: user.is_admin === 1,
      deactivated: user.deactivated === 1,
      erased: await isErased(this.deps.db, userId),
      is_guest: user.is_guest === 1,
      shadow_banned: false,
      locked: false,
      suspended: false,
      approved: true,
      // Seconds, as the reference server's user object has it (its list has milliseconds).
      creation_ts: Math.floor(Number(user.created_ts) / 1000),
      appservice_id: user.appservice_id,
      consent_server_notice_sent: null,
      consent_version: null,
      consent_ts: null,
      user_type: await selectUserType(this.deps.db, userId),
      last_seen_ts: lastSeen,
    };
  }

  // --- Creating and modifying ---------------------------------------------------------------

  /** PUT /v2/users/{userId}: creates the account (201) or changes it (200); replies with the user object. */
  async upsert(actor: AdminActor, target: string, body: JsonObject): Promise<{ created: boolean; user: JsonObject }> {
    const userId = this.localUser(target);
    const spec = parseUpsert(body);
    if (spec.threepids !== undefined) {
      for (const t of spec.threepids) {
        const owner = await threepidOwner(this.deps.db, t.medium, t.address);
        if (owner !== undefined && owner !== userId) throw HearthError.invalidParam('Threepid is already in use by another user');
      }
    }
    if (spec.externalIds !== undefined) {
      for (const e of spec.externalIds) {
        const owner = await externalIdOwner(this.deps.db, e.auth_provider, e.external_id);
        if (owner !== undefined && owner !== userId) throw HearthError.invalidParam('External id is already in use');
      }
    }
    const existing = await findUser(this.deps.db, userId);
    const profileActor = { userId: actor.userId, isAdmin: true };
    if (existing === undefined) {
      if (spec.deactivated === true) throw HearthError.invalidParam('Cannot create a deactivated user');
      const localpart = userId.slice(1, userId.lastIndexOf(':'));
      if (localpart !== localpart.toLowerCase()) throw new HearthError(400, 'M_INVALID_USERNAME', 'User ID may not contain upper-case letters');
      await this.deps.accounts.registerUser({
        localpart,
        password: spec.password ?? null,
        admin: spec.admin ?? false,
        ...(spec.displayname !== undefined && spec.displayname !== null ? { displayname: spec.displayname } : {}),
      });
      if (spec.avatarUrl !== undefined && spec.avatarUrl !== null) await this.deps.profiles.setAvatarUrl(profileActor, userId, spec.avatarUrl);
      await this.setIdentifiers(userId, spec);
      return { created: true, user: await this.get(userId) };
    }
    if (spec.admin === false && userId === actor.userId) throw new HearthError(400, 'M_UNKNOWN', 'You may not demote yourself.');
    if (spec.deactivated === false && existing.deactivated === 1) {
      if (spec.password === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Must provide a password to re-activate an account.');
      await this.deps.accounts.reactivateUser(userId, spec.password);
    } else if (spec.password !== undefined && spec.deactivated !== true) {
      await this.deps.accounts.setPassword(userId, spec.password, spec.logoutDevices);
    }
    if (spec.displayname !== undefined) await this.deps.profiles.setDisplayname(profileActor, userId, spec.displayname ?? '');
    if (spec.avatarUrl !== undefined) await this.deps.profiles.setAvatarUrl(profileActor, userId, spec.avatarUrl ?? '');
    if (spec.admin !== undefined && spec.admin !== (existing.is_admin === 1)) await this.deps.accounts.setAdmin(userId, spec.admin);
    await this.setIdentifiers(userId, spec);
    if (spec.deactivated === true && existing.deactivated === 0) await this.deactivate(userId, false);
    return { created: false, user: await this.get(userId) };
  }

  private async setIdentifiers(userId: string, spec: UpsertSpec): Promise<void> {
    if (spec.threepids !== undefined) await replaceThreepids(this.deps.db, userId, spec.threepids, this.now());
    if (spec.externalIds !== undefined) await replaceExternalIds(this.deps.db, userId, spec.externalIds);
    if (spec.userType !== undefined) await setUserType(this.deps.db, userId, spec.userType);
  }

  /** POST /v1/deactivate/{userId}. */
  async deactivateUser(target: string, erase: boolean): Promise<JsonObject> {
    const userId = this.localUser(target, 'Can only deactivate local users');
    if ((await findUser(this.deps.db, userId)) === undefined) throw HearthError.notFound('User not found');
    await this.deactivate(userId, erase);
    return { id_server_unbind_result: 'success' };
  }

  private deactivate(userId: string, erase: boolean): Promise<void> {
    return this.deps.accounts.deactivateUser(userId, { erase });
  }

  /** POST /v1/reset_password/{userId}. */
  async resetPassword(target: string, newPassword: string, logoutDevices: boolean): Promise<void> {
    const userId = this.localUser(target);
    checkPassword(newPassword);
    const user = await findUser(this.deps.db, userId);
    if (!user) throw HearthError.notFound('User not found');
    if (user.deactivated === 1) throw new HearthError(400, 'M_UNKNOWN', 'Cannot set the password of a deactivated user');
    await this.deps.accounts.setPassword(userId, newPassword, logoutDevices);
  }

  async isAdmin(target: string): Promise<boolean> {
    const userId = this.localUser(target, 'Only local users can be admins of this homeserver');
    const user = await findUser(this.deps.db, userId);
    if (!user) throw HearthError.notFound('User not found');
    return user.is_admin === 1;
  }

  async setAdmin(actor: AdminActor, target: string, admin: boolean): Promise<void> {
    const userId = this.localUser(target, 'Only local users can be admins of this homeserver');
    if (userId === actor.userId && !admin) throw new HearthError(400, 'M_UNKNOWN', 'You may not demote yourself.');
    if ((await findUser(this.deps.db, userId)) === undefined) throw HearthError.notFound('User not found');
    await this.deps.accounts.setAdmin(userId, admin);
  }

  // --- Devices ------------------------------------------------------------------------------

  async devices(target: string): Promise<JsonObject> {
    const userId = await this.existingLocalUser(target);
    const devices = (await listDevices(this.deps.db, userId)).map(deviceJson);
    return { devices, total: devices.length };
  }

  async device(target: string, deviceId: string): Promise<JsonObject> {
    const userId = await this.existingLocalUser(target);
    const row = await findDevice(this.deps.db, userId, deviceId);
    if (!row) throw HearthError.notFound('Device not found');
    return deviceJson(row);
  }

  async renameDevice(target: string, deviceId: string, displayName: string | undefined): Promise<void> {
    const userId = await this.existingLocalUser(target);
    if ((await findDevice(this.deps.db, userId, deviceId)) === undefined) throw HearthError.notFound('Device not found');
    if (displayName !== undefined) await this.deps.accounts.renameDeviceOf(userId, deviceId, displayName);
  }

  async deleteDevices(target: string, deviceIds: readonly string[]): Promise<void> {
    const userId = await this.existingLocalUser(target);
    await this.deps.accounts.deleteDevicesOf(userId, deviceIds);
  }

  // --- Rooms, login, rate limits -------------------------------------------------------------

  async joinedRooms(target: string): Promise<JsonObject> {
    const userId = parseUserId(target, { allowNonCompliant: true });
    const rooms = await this.deps.joinedRooms(userId);
    return { joined_rooms: rooms, total: rooms.length };
  }

  /** GET /v1/users/{userId}/pushers */
  async pushers(target: string): Promise<JsonObject> {
    const userId = await this.existingLocalUser(target);
    const pushers = (await listPushers(this.deps.db, userId)).map(pusherJson);
    return { pushers: pushers as unknown as JsonObject[], total: pushers.length };
  }

  /** POST /v1/users/{userId}/login: a token for the user, not for oneself. */
  async loginAs(actor: AdminActor, target: string, validUntilMs: number | null): Promise<JsonObject> {
    const userId = this.localUser(target);
    if (userId === actor.userId) throw new HearthError(400, 'M_UNKNOWN', 'Cannot use admin API to login as self');
    if (validUntilMs !== null && validUntilMs < this.now()) throw HearthError.invalidParam("'valid_until_ms' parameter cannot be in the past");
    const user = await findUser(this.deps.db, userId);
    if (!user) throw HearthError.notFound('User not found');
    if (user.deactivated === 1) throw new HearthError(400, 'M_UNKNOWN', 'Cannot log in as a deactivated user');
    return { access_token: await this.deps.accounts.loginAs(userId, validUntilMs) };
  }

  async rateLimit(target: string): Promise<JsonObject> {
    const userId = await this.existingLocalUser(target, 'Can only look up local users');
    const o = this.deps.rateLimits.get(userId);
    return o === undefined ? {} : { messages_per_second: o.messagesPerSecond, burst_count: o.burstCount };
  }

  async setRateLimit(target: string, messagesPerSecond: number, burstCount: number): Promise<JsonObject> {
    const userId = await this.existingLocalUser(target, 'Only local users can be ratelimited');
    await this.deps.rateLimits.set(userId, { messagesPerSecond, burstCount });
    return { messages_per_second: messagesPerSecond, burst_count: burstCount };
  }

  async deleteRateLimit(target: string): Promise<void> {
    const userId = await this.existingLocalUser(target, 'Only local users can be ratelimited');
    await this.deps.rateLimits.delete(userId);
  }

  // --- Helpers ------------------------------------------------------------------------------

  private localUser(target: string, message = 'Can only look up local users'): string {
    const userId = parseUserId(target, { allowNonCompliant: true });
    if (serverNameOf(userId) !== this.deps.serverName) throw HearthError.invalidParam(message);
    return userId;
  }

  private async existingLocalUser(target: string, message?: string): Promise<string> {
    const userId = this.localUser(target, message);
    if ((await findUser(this.deps.db, userId)) === undefined) throw HearthError.notFound('User not found');
    return userId;
  }
}

function deviceJson(d: DeviceRow): JsonObject {
  return {
    device_id: d.device_id,
    display_name: d.display_name,
    last_seen_ip: d.last_seen_ip,
    last_seen_ts: d.last_seen_ts === null ? null : Number(d.last_seen_ts),
    last_seen_user_agent: d.last_seen_user_agent,
    user_id: d.user_id,
  };
}

function checkPassword(password: unknown): asserts password is string {
  if (typeof password !== 'string' || password.length > MAX_PASSWORD_LENGTH) throw HearthError.invalidParam('Invalid password');
}

interface UpsertSpec {
  readonly password?: string;
  readonly logoutDevices: boolean;
  readonly displayname?: string | null;
  readonly avatarUrl?: string | null;
  readonly admin?: boolean;
  readonly deactivated?: boolean;
  readonly threepids?: { medium: string; address: string }[];
  readonly externalIds?: { auth_provider: string; external_id: string }[];
  readonly userType?: string | null;
}

function optionalBool(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw HearthError.invalidParam(`'${key}' parameter is not of type boolean`);
  return v;
}

function optionalNullableString(body: JsonObject, key: string): string | null | undefined {
  const v = body[key];
  if (v === undefined || v === null) return v;
  if (typeof v !== 'string') throw HearthError.invalidParam(`'${key}' parameter is not of type string`);
  return v;
}

function objectList(body: JsonObject, key: string, fields: readonly string[]): Record<string, string>[] | undefined {
  const v = body[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw HearthError.invalidParam(`'${key}' parameter is not a list`);
  return v.map((item) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw HearthError.invalidParam(`'${key}' entries must be objects`);
    const out: Record<string, string> = {};
    for (const f of fields) {
      const value = (item as Record<string, unknown>)[f];
      if (typeof value !== 'string' || value === '') throw HearthError.invalidParam(`Each entry of '${key}' needs a string '${f}'`);
      out[f] = value;
    }
    return out;
  });
}

function parseUpsert(body: JsonObject): UpsertSpec {
  const password = body['password'];
  if (password !== undefined && password !== null) checkPassword(password);
  const userType = optionalNullableString(body, 'user_type');
  if (userType !== undefined && userType !== null && !USER_TYPES.has(userType)) throw HearthError.invalidParam('Invalid user type');
  const threepids = objectList(body, 'threepids', ['medium', 'address'])?.map((t) => ({
    medium: t['medium']!,
    // Email addresses are compared case-insensitively, so they are stored lower-cased.
    address: t['medium'] === 'email' ? t['address']!.toLowerCase() : t['address']!,
  }));
  const externalIds = objectList(body, 'external_ids', ['auth_provider', 'external_id'])?.map((e) => ({ auth_provider: e['auth_provider']!, external_id: e['external_id']! }));
  const admin = optionalBool(body, 'admin');
  const deactivated = optionalBool(body, 'deactivated');
  const logoutDevices = optionalBool(body, 'logout_devices') ?? true;
  const displayname = optionalNullableString(body, 'displayname');
  const avatarUrl = optionalNullableString(body, 'avatar_url');
  return {
    ...(typeof password === 'string' ? { password } : {}),
    logoutDevices,
    ...(displayname !== undefined ? { displayname } : {}),
    ...(avatarUrl !== undefined ? { avatarUrl } : {}),
    ...(admin !== undefined ? { admin } : {}),
    ...(deactivated !== undefined ? { deactivated } : {}),
    ...(threepids !== undefined ? { threepids } : {}),
    ...(externalIds !== undefined ? { externalIds } : {}),
    ...(userType !== undefined ? { userType } : {}),
  };
}
