// AccountService: registration, login, logout, passwords, deactivation, devices and the
// access-token authenticator, over the accounts tables. The one service behind the account routes,
// the admin API's account helpers and the CLI's `register`.

import type { Kysely } from 'kysely';
import type { Authenticator, Requester } from './requester.js';
import { HearthError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import { deleteAccessToken, deleteUserTokensExcept } from '../storage/accounts/access-tokens.js';
import { deleteAllDevices, deleteDevices } from '../storage/accounts/devices.js';
import { deleteUserUiaSessions } from '../storage/accounts/uia-sessions.js';
import { markUserErased } from '../storage/accounts/erased-users.js';
import { deleteUserIdentifiers } from '../storage/accounts/admin-users.js';
import { updateProfile } from '../storage/user-data/profiles.js';
import { countUsers, findUser, markDeactivated, markReactivated, setAdmin, setPasswordHash, type UserCountOptions, type UserRow } from '../storage/accounts/users.js';
import { AccessTokenAuthenticator } from './authenticator.js';
import { Devices, type DeviceChangedHook, type DeviceInfo, type DevicesDeletedHook } from './devices.js';
import { findLocalUser, identifiedUser } from './identifiers.js';
import { passwordStage } from './password-stage.js';
import { checkNewPassword, hashPassword, isOutdatedPasswordHash, verifyPassword } from './passwords.js';
import { RegistrationTokens, type NewRegistrationToken, type RegistrationToken } from './registration-tokens.js';
import { Registration, type RegisterHook, type RegisterRequest, type RegisterResult, type UsernameCheck } from './registration.js';
import { macMatches, NonceStore, sharedSecretMac, type SharedSecretFields } from './shared-secret.js';
import type { TokenCacheOptions } from './tokens.js';
import { STAGE_DUMMY, STAGE_PASSWORD, STAGE_REGISTRATION_TOKEN, UserInteractiveAuth } from './uia.js';

export type DeactivateHook = (userId: string, options: { erase: boolean }) => Promise<void> | void;

export interface AccountServiceDeps {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly bcryptCost: number;
  readonly registrationDisabled: boolean;
  readonly guestsDisabled: boolean;
  /** Null: shared-secret registration is off. */
  readonly registrationSharedSecret: string | null;
  /** Open registration also needs a registration token. Default false. */
  readonly registrationRequiresToken?: boolean;
  /** Milliseconds since the epoch. Default Date.now. */
  readonly now?: () => number;
  /** The client API's public base URL; when set, login replies carry it as `well_known`. */
  readonly clientBaseUrl?: string;
  readonly onRegister?: RegisterHook;
  /** Called after an account is deactivated (its tokens and devices are gone by then, and an erased user's mark is stored). */
  readonly onDeactivate?: DeactivateHook;
  readonly onDevicesDeleted?: DevicesDeletedHook;
  readonly onDeviceChanged?: DeviceChangedHook;
  readonly checkUsername?: UsernameCheck;
  readonly tokenCache?: TokenCacheOptions;
  readonly uiaSessionLifetimeMs?: number;
}

export interface LoginRequest {
  readonly type: string;
  /** Holds `identifier` (or the legacy `user`, `medium`, `address`): usually the request body. */
  readonly identifier: JsonObject;
  readonly password: string | undefined;
  readonly deviceId?: string;
  readonly initialDeviceDisplayName?: string;
}

export interface LoginResult {
  readonly userId: string;
  readonly accessToken: string;
  readonly deviceId: string;
  readonly homeServer: string;
  readonly wellKnown?: JsonObject;
}

export interface AccountInfo {
  readonly userId: string;
  readonly isAdmin: boolean;
  readonly isGuest: boolean;
  readonly deactivated: boolean;
  readonly createdTs: number;
}

/** A request's user-interactive auth input. */
export interface UiaInput {
  readonly auth: unknown;
}

const PASSWORD_FLOWS = [[STAGE_PASSWORD]] as const;

export class AccountService {
  readonly authenticate: Authenticator;
  private readonly db: Kysely<Schema>;
  private readonly now: () => number;
  private readonly tokens: AccessTokenAuthenticator;
  private readonly devices: Devices;
  private readonly uia: UserInteractiveAuth;
  private readonly registration: Registration;
  private readonly registrationTokens: RegistrationTokens;
  private readonly nonces: NonceStore;

  constructor(private readonly deps: AccountServiceDeps) {
    this.db = deps.db;
    this.now = deps.now ?? Date.now;
    this.tokens = new AccessTokenAuthenticator({ db: this.db, now: this.now, cache: deps.tokenCache });
    this.authenticate = this.tokens.authenticate;
    this.devices = new Devices({ db: this.db, now: this.now, tokens: this.tokens, onDevicesDeleted: deps.onDevicesDeleted, onDeviceChanged: deps.onDeviceChanged });
    this.registrationTokens = new RegistrationTokens(this.db, this.now, (db) => countUsers(db, { includeDeactivated: true }));
    this.uia = new UserInteractiveAuth({
      db: this.db,
      now: this.now,
      stages: {
        [STAGE_DUMMY]: async () => {},
        [STAGE_PASSWORD]: passwordStage(this.db, deps.serverName),
        [STAGE_REGISTRATION_TOKEN]: this.registrationTokens.stage(),
      },
      sessionLifetimeMs: deps.uiaSessionLifetimeMs,
    });
    this.registration = new Registration({
      db: this.db,
      now: this.now,
      serverName: deps.serverName,
      bcryptCost: deps.bcryptCost,
      registrationDisabled: deps.registrationDisabled,
      registrationRequiresToken: deps.registrationRequiresToken ?? false,
      guestsDisabled: deps.guestsDisabled,
      uia: this.uia,
      registrationTokens: this.registrationTokens,
      devices: this.devices,
      onRegister: deps.onRegister,
      checkUsername: deps.checkUsername,
      onGuestUpgraded: (userId) => this.tokens.invalidateUser(userId),
    });
    this.nonces = new NonceStore(this.now);
  }

  get serverName(): string {
    return this.deps.serverName;
  }

  /** Access-token cache lookups so far that found the token, and that did not (for metrics). */
  get tokenCacheLookups(): { hits: number; misses: number } {
    return this.tokens.cacheLookups;
  }

  // --- Registration -------------------------------------------------------------------------

  /** The UIA flows of a `user` registration; 403 M_FORBIDDEN when registration is closed. */
  registrationFlows(): Promise<string[][]> {
    return this.registration.flows();
  }

  register(req: RegisterRequest): Promise<RegisterResult> {
    return this.registration.register(req);
  }

  /** Registers a user of an application service (see Registration.registerForAppService). */
  registerForAppService(appserviceId: string, localpart: string, login: Parameters<Registration['registerForAppService']>[2]): Promise<RegisterResult> {
    return this.registration.registerForAppService(appserviceId, localpart, login);
  }

  /**
   * Logs in a user an application service acts as (`m.login.application_service`); the caller has
   * checked that the service may. 403 when the account does not exist or is deactivated.
   */
  async loginForAppService(userId: string, device: { readonly deviceId?: string | undefined; readonly initialDeviceDisplayName?: string | undefined }): Promise<LoginResult> {
    const user = await findUser(this.db, userId);
    if (!user) throw HearthError.forbidden('Invalid username or password');
    if (user.deactivated === 1) throw new HearthError(403, 'M_USER_DEACTIVATED', 'This account has been deactivated');
    const session = await this.devices.startSession(user.user_id, { deviceId: device.deviceId, displayName: device.initialDeviceDisplayName });
    return {
      userId: user.user_id,
      accessToken: session.accessToken,
      deviceId: session.deviceId,
      homeServer: this.deps.serverName,
      ...(this.deps.clientBaseUrl ? { wellKnown: { 'm.homeserver': { base_url: this.deps.clientBaseUrl } } } : {}),
    };
  }

  /** The account's flags, or undefined when there is no active account of that id. */
  async activeAccount(userId: string): Promise<{ readonly isAdmin: boolean } | undefined> {
    const user = await findUser(this.db, userId);
    return user === undefined || user.deactivated === 1 ? undefined : { isAdmin: user.is_admin === 1 };
  }

  /** Whether the user has this device. */
  async hasDevice(userId: string, deviceId: string): Promise<boolean> {
    return (await this.devices.get(userId, deviceId)) !== undefined;
  }

  /** Resolves when the username could be registered now; throws M_INVALID_USERNAME / M_USER_IN_USE. */
  checkUsernameAvailable(username: string): Promise<void> {
    return this.registration.checkUsername(username);
  }

  registrationTokenValid(token: string): Promise<boolean> {
    return this.registrationTokens.isValid(token);
  }

  // --- Login and logout ---------------------------------------------------------------------

  loginFlows(): JsonObject[] {
    return [{ type: STAGE_PASSWORD }];
  }

  async login(req: LoginRequest): Promise<LoginResult> {
    if (req.type !== STAGE_PASSWORD) throw new HearthError(400, 'M_UNKNOWN', 'Unknown login type');
    const named = identifiedUser(req.identifier);
    if (req.password === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing parameter: password');
    const user = await findLocalUser(this.db, this.deps.serverName, named);
    if (!user) throw HearthError.forbidden('Invalid username or password');
    if (user.deactivated === 1) throw new HearthError(403, 'M_USER_DEACTIVATED', 'This account has been deactivated');
    if (!(await verifyPassword(req.password, user.password_hash))) throw HearthError.forbidden('Invalid username or password');
    // A hash of the earlier form is rewritten in the current one, unless the password changed meanwhile.
    if (user.password_hash !== null && isOutdatedPasswordHash(user.password_hash)) {
      await setPasswordHash(this.db, user.user_id, await hashPassword(req.password, this.deps.bcryptCost), user.password_hash);
    }
    const session = await this.devices.startSession(user.user_id, {
      deviceId: req.deviceId,
      displayName: req.initialDeviceDisplayName,
    });
    return {
      userId: user.user_id,
      accessToken: session.accessToken,
      deviceId: session.deviceId,
      homeServer: this.deps.serverName,
      ...(this.deps.clientBaseUrl ? { wellKnown: { 'm.homeserver': { base_url: this.deps.clientBaseUrl } } } : {}),
    };
  }

  /** Revokes the requester's token and deletes its device. */
  async logout(requester: Requester): Promise<void> {
    if (requester.deviceId !== null) {
      const deviceId = requester.deviceId;
      const deleted = await this.db.transaction().execute((trx) => deleteDevices(trx, requester.userId, [deviceId]));
      await this.devices.afterDelete(requester.userId, deleted);
    } else if (requester.tokenId !== undefined) {
      await deleteAccessToken(this.db, requester.tokenId);
      this.tokens.invalidateUser(requester.userId);
    }
  }

  /** Revokes every token of the user and deletes every device. */
  async logoutAll(userId: string): Promise<void> {
    await this.devices.deleteAll(userId);
  }

  // --- Password and deactivation ------------------------------------------------------------

  /** POST /account/password: UIA with the current password, then the change. */
  async changePassword(requester: Requester, req: UiaInput & { newPassword: string; logoutDevices: boolean }): Promise<void> {
    checkNewPassword(req.newPassword);
    const session = await this.uia.authenticate({
      operation: 'POST /account/password',
      userId: requester.userId,
      flows: PASSWORD_FLOWS,
      auth: req.auth,
    });
    await this.setPassword(requester.userId, req.newPassword, req.logoutDevices, requester);
    await this.uia.finish(session);
  }

  /** POST /account/deactivate: UIA with the current password, then deactivation. */
  async deactivateAccount(requester: Requester, req: UiaInput & { erase: boolean }): Promise<void> {
    await this.uia.authenticate({
      operation: 'POST /account/deactivate',
      userId: requester.userId,
      flows: PASSWORD_FLOWS,
      auth: req.auth,
    });
    // Deactivation removes the user's UIA sessions, this one included.
    await this.deactivateUser(requester.userId, { erase: req.erase });
  }

  /**
   * Sets a new password. With `logoutDevices`, every other device is deleted and every other token
   * revoked; `keep` names the requester whose device and token stay (none for the admin API).
   */
  async setPassword(userId: string, newPassword: string, logoutDevices: boolean, keep?: Requester): Promise<void> {
    checkNewPassword(newPassword);
    const hash = await hashPassword(newPassword, this.deps.bcryptCost);
    const deleted = await this.db.transaction().execute(async (trx) => {
      if (!(await setPasswordHash(trx, userId, hash))) throw HearthError.notFound('Unknown user');
      if (!logoutDevices) return [];
      const gone = await deleteAllDevices(trx, userId, keep?.deviceId ?? null);
      await deleteUserTokensExcept(trx, userId, keep?.tokenId ?? null);
      return gone;
    });
    if (logoutDevices) await this.devices.afterDelete(userId, deleted);
  }

  /**
   * Deactivates the account: tokens, devices and password gone; the user ID stays taken. With
   * `erase`, the user is also marked erased (the room server then serves their messages redacted
   * to those who were not in the room when they were sent) and their profile is emptied.
   */
  async deactivateUser(userId: string, options: { erase?: boolean } = {}): Promise<void> {
    const deleted = await this.db.transaction().execute(async (trx) => {
      if (!(await findUser(trx, userId))) throw HearthError.notFound('Unknown user');
      await markDeactivated(trx, userId);
      await deleteUserUiaSessions(trx, userId);
      // No identifier of a deactivated account may be used to recover it.
      await deleteUserIdentifiers(trx, userId);
      if (options.erase === true) {
        await markUserErased(trx, userId, this.now());
        await updateProfile(trx, userId, { displayname: null, avatarUrl: null });
      }
      return deleteAllDevices(trx, userId);
    });
    await this.devices.afterDelete(userId, deleted);
    await this.deps.onDeactivate?.(userId, { erase: options.erase ?? false });
  }

  // --- Devices ------------------------------------------------------------------------------

  listDevices(userId: string): Promise<DeviceInfo[]> {
    return this.devices.list(userId);
  }

  async getDevice(userId: string, deviceId: string): Promise<DeviceInfo> {
    const device = await this.devices.get(userId, deviceId);
    if (!device) throw HearthError.notFound('Unknown device');
    return device;
  }

  /**
   * Renames a device (a missing display name leaves it as it is). An application service may
   * create a device this way; returns whether one was created.
   */
  async updateDevice(requester: Requester, deviceId: string, displayName: string | undefined): Promise<{ created: boolean }> {
    const existing = await this.devices.get(requester.userId, deviceId);
    if (!existing) {
      if (requester.appserviceId === undefined) throw HearthError.notFound('Unknown device');
      return { created: await this.devices.create(requester.userId, deviceId, displayName ?? null) };
    }
    if (displayName !== undefined) await this.devices.rename(requester.userId, deviceId, displayName);
    return { created: false };
  }

  /** DELETE /devices/{deviceId}: UIA (except for application services), then deletion. */
  async deleteDevice(requester: Requester, deviceId: string, req: UiaInput): Promise<void> {
    await this.deleteDevicesWithAuth(requester, [deviceId], `DELETE /devices/${deviceId}`, req.auth);
  }

  /** POST /delete_devices: UIA, then deletion of every listed device the user has. */
  async deleteDevices(requester: Requester, deviceIds: readonly string[], req: UiaInput): Promise<void> {
    await this.deleteDevicesWithAuth(requester, deviceIds, 'POST /delete_devices', req.auth);
  }

  private async deleteDevicesWithAuth(requester: Requester, deviceIds: readonly string[], operation: string, auth: unknown): Promise<void> {
    if (requester.appserviceId !== undefined) {
      await this.devices.delete(requester.userId, deviceIds);
      return;
    }
    const session = await this.uia.authenticate({ operation, userId: requester.userId, flows: PASSWORD_FLOWS, auth });
    await this.devices.delete(requester.userId, deviceIds);
    await this.uia.finish(session);
  }

  // --- Administration -----------------------------------------------------------------------

  /** Renames a device of the user (the admin API); false when the user has no such device. */
  renameDeviceOf(userId: string, deviceId: string, displayName: string | null): Promise<boolean> {
    return this.devices.rename(userId, deviceId, displayName);
  }

  /** Deletes devices of the user without user-interactive auth (the admin API). */
  async deleteDevicesOf(userId: string, deviceIds: readonly string[]): Promise<void> {
    await this.devices.delete(userId, deviceIds);
  }

  /** Creates an account without user-interactive auth (CLI, admin API); no login. */
  async registerUser(spec: { localpart: string; password: string | null; admin: boolean; displayname?: string }): Promise<string> {
    const localpart = spec.localpart.toLowerCase();
    await this.registration.checkUsername(localpart);
    if (spec.password !== null) checkNewPassword(spec.password);
    return this.registration.createAccount({
      localpart,
      passwordHash: spec.password === null ? null : await hashPassword(spec.password, this.deps.bcryptCost),
      admin: spec.admin,
      guest: false,
      displayname: spec.displayname,
    });
  }

  async getAccount(userId: string): Promise<AccountInfo | undefined> {
    const row = await findUser(this.db, userId);
    return row && toAccountInfo(row);
  }

  async userExists(userId: string): Promise<boolean> {
    return (await findUser(this.db, userId)) !== undefined;
  }

  async isAdmin(userId: string): Promise<boolean> {
    const row = await findUser(this.db, userId);
    return row !== undefined && row.is_admin === 1 && row.deactivated === 0;
  }

  async setAdmin(userId: string, admin: boolean): Promise<void> {
    if (!(await setAdmin(this.db, userId, admin))) throw HearthError.notFound('Unknown user');
    this.tokens.invalidateUser(userId);
  }

  /** Registered accounts; by default neither guests nor deactivated accounts count. */
  countUsers(options?: UserCountOptions): Promise<number> {
    return countUsers(this.db, options);
  }

  createRegistrationToken(spec: NewRegistrationToken): Promise<RegistrationToken> {
    return this.registrationTokens.create(spec);
  }

  listRegistrationTokens(): Promise<RegistrationToken[]> {
    return this.registrationTokens.list();
  }

  getRegistrationToken(token: string): Promise<RegistrationToken | undefined> {
    return this.registrationTokens.get(token);
  }

  updateRegistrationToken(token: string, change: { usesAllowed?: number | null; expiryTime?: number | null }): Promise<RegistrationToken | undefined> {
    return this.registrationTokens.update(token, change);
  }

  /** Reactivates a deactivated account with a new password; false when it was not deactivated. */
  async reactivateUser(userId: string, password: string): Promise<boolean> {
    checkNewPassword(password);
    const reactivated = await markReactivated(this.db, userId, await hashPassword(password, this.deps.bcryptCost));
    this.tokens.invalidateUser(userId);
    return reactivated;
  }

  /**
   * A token for the user on a new device, for a server admin acting as them (the admin API's
   * login); it stops working at `validUntilTs` when given.
   */
  async loginAs(userId: string, validUntilTs: number | null): Promise<string> {
    const session = await this.devices.startSession(userId, { displayName: 'Admin login' }, validUntilTs);
    return session.accessToken;
  }

  deleteRegistrationToken(token: string): Promise<boolean> {
    return this.registrationTokens.delete(token);
  }

  /**
   * On a server without accounts, a new single-use token with which the first account registers
   * and becomes admin (to print at start); null once an account exists.
   */
  firstStartToken(): Promise<string | null> {
    return this.registrationTokens.firstStartToken();
  }

  // --- Shared-secret registration -----------------------------------------------------------

  /** 400 M_UNKNOWN when no shared secret is configured (as Synapse answers). */
  assertSharedSecretEnabled(): void {
    this.requireSharedSecret();
  }

  sharedSecretNonce(): string {
    this.requireSharedSecret();
    return this.nonces.issue();
  }

  /** Registers (and logs in) the account the admin API's shared-secret request describes. */
  async sharedSecretRegister(req: SharedSecretFields & { mac: string; displayname?: string }): Promise<LoginResult> {
    const secret = this.requireSharedSecret();
    if (!this.nonces.take(req.nonce)) throw new HearthError(400, 'M_UNKNOWN', 'Unrecognised nonce');
    if (!macMatches(sharedSecretMac(secret, req), req.mac)) throw HearthError.forbidden('HMAC incorrect');
    const userId = await this.registerUser({
      localpart: req.username,
      password: req.password,
      admin: req.admin,
      displayname: req.displayname,
    });
    const session = await this.devices.startSession(userId, {});
    return { userId, accessToken: session.accessToken, deviceId: session.deviceId, homeServer: this.deps.serverName };
  }

  private requireSharedSecret(): string {
    const secret = this.deps.registrationSharedSecret;
    if (secret === null || secret === '') throw new HearthError(400, 'M_UNKNOWN', 'Shared secret registration is not enabled');
    return secret;
  }
}

function toAccountInfo(row: UserRow): AccountInfo {
  return {
    userId: row.user_id,
    isAdmin: row.is_admin === 1,
    isGuest: row.is_guest === 1,
    deactivated: row.deactivated === 1,
    createdTs: Number(row.created_ts),
  };
}
