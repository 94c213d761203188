// Account creation: the /register endpoint's rules (kinds, flows, username checks) and the one
// place where accounts are inserted, shared by registration, the admin API and the CLI.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { validateLocalpart, type ServerName } from '../protocol/ids.js';
import type { Schema } from '../storage/schema.js';
import { findUser, insertUser, localpartTaken, nextCounterValue, setAdmin, upgradeGuestUser } from '../storage/accounts/users.js';
import type { Devices } from './devices.js';
import { checkNewPassword, hashPassword } from './passwords.js';
import type { RegistrationTokens } from './registration-tokens.js';
import { STAGE_DUMMY, STAGE_REGISTRATION_TOKEN, UiaChallenge, type UiaRequest, type UiaSession, type UserInteractiveAuth } from './uia.js';

/** Called after an account is created (e.g. to create its profile with a default display name). */
export type RegisterHook = (userId: string, localpart: string, displayname?: string) => Promise<void> | void;

/** Extra checks on a requested localpart (e.g. appservice namespaces); throws to refuse it. */
export type UsernameCheck = (localpart: string) => Promise<void> | void;

export interface RegistrationDeps {
  readonly db: Kysely<Schema>;
  readonly now: () => number;
  readonly serverName: string;
  readonly bcryptCost: number;
  readonly registrationDisabled: boolean;
  readonly registrationRequiresToken: boolean;
  readonly guestsDisabled: boolean;
  readonly uia: UserInteractiveAuth;
  readonly registrationTokens: RegistrationTokens;
  readonly devices: Devices;
  readonly onRegister?: RegisterHook;
  readonly checkUsername?: UsernameCheck;
  /** Called after a guest became a full account, so cached views of its tokens are dropped. */
  readonly onGuestUpgraded?: (userId: string) => void;
}

export interface RegisterRequest {
  readonly kind: 'user' | 'guest';
  readonly auth?: unknown;
  readonly username?: string;
  readonly password?: string;
  readonly deviceId?: string;
  readonly initialDeviceDisplayName?: string;
  readonly inhibitLogin?: boolean;
  /** Whether the client supports refresh tokens; kept with the session (none are issued here). */
  readonly refreshToken?: boolean;
  /**
   * The guest whose access token came with the request (spec: guest access, "upgrade"): the
   * registration turns that guest into a full account, whose username must be the guest's localpart.
   */
  readonly guestUserId?: string;
}

export interface RegisterResult {
  readonly userId: string;
  /** Absent when login was inhibited. */
  readonly accessToken?: string;
  readonly deviceId?: string;
}

export interface NewAccount {
  /** Null: allocate the next free numeric localpart. */
  readonly localpart: string | null;
  readonly passwordHash: string | null;
  readonly admin: boolean;
  readonly guest: boolean;
  readonly displayname?: string;
  /** A registration token to count a use of; the account is not created when it is used up. */
  readonly registrationToken?: string;
  readonly appserviceId?: string | null;
}

/** The registration token admitted no more accounts by the time the registration completed. */
export class RegistrationTokenUsedUp extends Error {}

const NUMERIC_LOCALPART_COUNTER = 'numeric_localpart';
const REGISTER_OPERATION = 'POST /register';
/** Session values: the hashed password of an unfinished registration, the account of a finished one. */
const PASSWORD_HASH = 'password_hash';
const REGISTERED_USER_ID = 'registered_user_id';

/**
 * The parameters a request gives, to keep with its session. As in Synapse, a device display name
 * sent without a password is ignored: clients that send it alone on a later request would
 * otherwise wipe the parameters given first.
 */
function requestParams(req: RegisterRequest): JsonObject {
  const kept: JsonObject = {};
  if (req.username !== undefined) kept['username'] = req.username;
  if (req.guestUserId !== undefined) kept['guest_user_id'] = req.guestUserId;
  if (req.deviceId !== undefined) kept['device_id'] = req.deviceId;
  if (req.initialDeviceDisplayName !== undefined && req.password !== undefined) kept['initial_device_display_name'] = req.initialDeviceDisplayName;
  if (req.inhibitLogin !== undefined) kept['inhibit_login'] = req.inhibitLogin;
  if (req.refreshToken !== undefined) kept['refresh_token'] = req.refreshToken;
  return kept;
}

const NUMERIC = /^[0-9]+$/;

export class Registration {
  constructor(private readonly deps: RegistrationDeps) {}

  /**
   * The flows a `user` registration may complete; 403 when registration is closed and no token
   * could admit anyone. A session already under way continues (its token may have been used up
   * meanwhile, which it is told in its own reply).
   */
  async flows(continuingSession = false): Promise<string[][]> {
    const { registrationDisabled, registrationRequiresToken } = this.deps;
    if (!registrationDisabled && !registrationRequiresToken) return [[STAGE_DUMMY], [STAGE_REGISTRATION_TOKEN]];
    if (continuingSession || (await this.deps.registrationTokens.anyUsable())) return [[STAGE_REGISTRATION_TOKEN]];
    throw HearthError.forbidden('Registration has been disabled');
  }

  /**
   * Whether a localpart may be registered: the strict grammar, no all-digit names (those are
   * allocated to guests), no leading underscore (kept for bridges), not taken.
   */
  async checkUsername(localpart: string): Promise<void> {
    validateLocalpart(localpart, { serverName: this.deps.serverName as ServerName });
    if (NUMERIC.test(localpart)) {
      throw new HearthError(400, 'M_INVALID_USERNAME', 'Numeric user IDs are reserved for guest users.');
    }
    if (localpart.startsWith('_')) throw new HearthError(400, 'M_INVALID_USERNAME', 'User ID may not begin with _');
    await this.deps.checkUsername?.(localpart);
    if (await localpartTaken(this.deps.db, localpart)) throw new HearthError(400, 'M_USER_IN_USE', 'User ID already taken.');
  }

  /**
   * An application service's user (`m.login.application_service`): no password, no user-interactive
   * auth, and none of the reservations of user registration (bridges' users often begin with `_`).
   * The caller has checked that the service may claim the name.
   */
  async registerForAppService(
    appserviceId: string,
    localpart: string,
    login: { readonly deviceId?: string | undefined; readonly initialDeviceDisplayName?: string | undefined; readonly inhibitLogin: boolean },
  ): Promise<RegisterResult> {
    validateLocalpart(localpart, { serverName: this.deps.serverName as ServerName });
    if (await localpartTaken(this.deps.db, localpart)) throw new HearthError(400, 'M_USER_IN_USE', 'User ID already taken.');
    const userId = await this.createAccount({ localpart, passwordHash: null, admin: false, guest: false, appserviceId });
    if (login.inhibitLogin) return { userId };
    const session = await this.deps.devices.startSession(userId, { deviceId: login.deviceId, displayName: login.initialDeviceDisplayName });
    return { userId, ...session };
  }

  /** A guest upgrade names the guest's own localpart, which is then neither reserved nor taken. */
  private checkGuestUpgrade(username: string | undefined, guestUserId: string): void {
    if (username === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'A guest upgrading its account must give its username');
    if (`@${username}:${this.deps.serverName}` !== guestUserId) {
      throw HearthError.forbidden(`A guest can only upgrade to its own user ID, ${guestUserId}`);
    }
  }

  /**
   * A `user` registration through user-interactive auth, as Synapse runs it. The session keeps the
   * first request's parameters (and the password, hashed), so a later request may carry only
   * `auth`; one that carries parameters again replaces them. Once the account exists the session
   * remembers it: the same request again (within the session's lifetime) logs the same account in
   * once more instead of failing; naming another username then is 400 M_UNKNOWN.
   */
  async register(req: RegisterRequest): Promise<RegisterResult> {
    if (req.kind === 'guest') return this.registerGuest(req);
    const sessionId = isJsonObject(req.auth) && typeof req.auth['session'] === 'string' ? req.auth['session'] : undefined;
    const flows = await this.flows(sessionId !== undefined);
    if (req.password !== undefined) checkNewPassword(req.password);
    const earlier = sessionId === undefined ? undefined : await this.deps.uia.peek(sessionId, REGISTER_OPERATION, null);
    const alreadyRegistered = earlier?.[REGISTERED_USER_ID];
    // The spec wants bad or taken usernames refused before authentication starts. Once this
    // session has made an account, only that account's name may be given (as Synapse answers).
    const username = req.username?.toLowerCase();
    if (typeof alreadyRegistered === 'string') {
      if (username !== undefined && `@${username}:${this.deps.serverName}` !== alreadyRegistered) {
        throw new HearthError(400, 'M_UNKNOWN', 'A different user ID has already been registered for this session');
      }
    } else if (req.guestUserId !== undefined) this.checkGuestUpgrade(username, req.guestUserId);
    else if (username !== undefined) await this.checkUsername(username);

    const given = requestParams(req);
    // matrix-js-sdk sends refresh_token with every request: alone, it replaces nothing.
    const replaces = Object.keys(given).some((k) => k !== 'refresh_token');
    const uiaRequest: UiaRequest = { operation: REGISTER_OPERATION, userId: null, flows, auth: req.auth, ...(replaces ? { request: given } : {}) };
    let session: UiaSession;
    try {
      session = await this.deps.uia.authenticate(uiaRequest);
    } catch (err) {
      // Kept hashed with the session, so that a later request need not send the password again.
      if (err instanceof UiaChallenge && req.password !== undefined && typeof earlier?.[PASSWORD_HASH] !== 'string') {
        await this.deps.uia.keep(err.sessionId, { [PASSWORD_HASH]: await hashPassword(req.password, this.deps.bcryptCost) });
      }
      throw err;
    }
    const stored = session.params['request'];
    const params: JsonObject = replaces ? given : { ...(isJsonObject(stored) ? stored : {}), ...given };

    const registered = session.params[REGISTERED_USER_ID];
    if (typeof registered === 'string') {
      const account = await findUser(this.deps.db, registered);
      if (!account || account.deactivated === 1) throw new HearthError(403, 'M_USER_DEACTIVATED', 'This account has been deactivated');
      return this.loginAfterRegistration(registered, params);
    }

    const storedHash = session.params[PASSWORD_HASH];
    if (req.password === undefined && typeof storedHash !== 'string') throw new HearthError(400, 'M_MISSING_PARAM', 'Missing password');
    const chosen = typeof params['username'] === 'string' ? params['username'].toLowerCase() : undefined;
    const guestUserId = typeof params['guest_user_id'] === 'string' ? params['guest_user_id'] : undefined;
    if (guestUserId !== undefined) this.checkGuestUpgrade(chosen, guestUserId);
    else if (chosen !== undefined) await this.checkUsername(chosen);
    // A password in this request wins over the one kept from an earlier request.
    const passwordHash = req.password !== undefined ? await hashPassword(req.password, this.deps.bcryptCost) : (storedHash as string);

    const token = session.completed.includes(STAGE_REGISTRATION_TOKEN) ? session.params['registration_token'] : undefined;
    const registrationToken = typeof token === 'string' ? token : undefined;
    let userId: string;
    try {
      userId =
        guestUserId !== undefined
          ? await this.upgradeGuest(guestUserId, passwordHash, registrationToken)
          : await this.createAccount({
              localpart: chosen ?? null,
              passwordHash,
              admin: false,
              guest: false,
              ...(registrationToken !== undefined ? { registrationToken } : {}),
            });
    } catch (err) {
      if (!(err instanceof RegistrationTokenUsedUp)) throw err;
      return this.deps.uia.retractStage(uiaRequest, session, STAGE_REGISTRATION_TOKEN, 'M_UNAUTHORIZED', 'Invalid registration token');
    }
    // The session stays until it expires, remembering the account instead of the password.
    await this.deps.uia.keep(session.id, { [REGISTERED_USER_ID]: userId }, [PASSWORD_HASH]);
    return this.loginAfterRegistration(userId, params);
  }

  /** The reply of a completed registration: a new login with the request's device, unless inhibited. */
  private async loginAfterRegistration(userId: string, params: JsonObject): Promise<RegisterResult> {
    if (params['inhibit_login'] === true) return { userId };
    const deviceId = params['device_id'];
    const name = params['initial_device_display_name'];
    const login = await this.deps.devices.startSession(userId, {
      deviceId: typeof deviceId === 'string' ? deviceId : undefined,
      displayName: typeof name === 'string' ? name : undefined,
    });
    return { userId, ...login };
  }

  private async registerGuest(req: RegisterRequest): Promise<RegisterResult> {
    if (this.deps.guestsDisabled) throw HearthError.forbidden('Guest access is disabled');
    // Only the device's display name is taken from a guest's request; the server picks the rest.
    const userId = await this.createAccount({ localpart: null, passwordHash: null, admin: false, guest: true });
    const login = await this.deps.devices.startSession(userId, { displayName: req.initialDeviceDisplayName });
    return { userId, ...login };
  }

  /**
   * Inserts the account (and counts the registration token's use) in one transaction, then runs
   * the register hook. A named localpart must have passed checkUsername; 400 M_USER_IN_USE when it
   * was taken meanwhile.
   */
  async createAccount(account: NewAccount): Promise<string> {
    const { serverName } = this.deps;
    const created = await this.deps.db.transaction().execute(async (trx) => {
      let localpart = account.localpart;
      for (;;) {
        const candidate = localpart ?? String(await nextCounterValue(trx, NUMERIC_LOCALPART_COUNTER));
        const userId = `@${candidate}:${serverName}`;
        const inserted = await insertUser(trx, {
          userId,
          localpart: candidate,
          passwordHash: account.passwordHash,
          isAdmin: account.admin,
          isGuest: account.guest,
          appserviceId: account.appserviceId ?? null,
          createdTs: this.deps.now(),
        });
        if (inserted) {
          localpart = candidate;
          break;
        }
        // A chosen name was taken meanwhile; an allocated number was taken by hand: try the next.
        if (account.localpart !== null) return undefined;
      }
      const userId = `@${localpart}:${serverName}`;
      if (account.registrationToken !== undefined) await this.useToken(trx, userId, account.registrationToken, account.admin);
      return { userId, localpart };
    });
    if (!created) throw new HearthError(400, 'M_USER_IN_USE', 'User ID already taken.');
    await this.deps.onRegister?.(created.userId, created.localpart, account.displayname);
    return created.userId;
  }

  /**
   * Gives the guest a password and makes it a full account (counting the registration token's
   * use in the same transaction). Its profile exists from its guest registration, so the register
   * hook does not run again. 400 M_USER_IN_USE when it is no guest any more.
   */
  private async upgradeGuest(userId: string, passwordHash: string, registrationToken: string | undefined): Promise<string> {
    const upgraded = await this.deps.db.transaction().execute(async (trx) => {
      if (!(await upgradeGuestUser(trx, userId, passwordHash))) return false;
      if (registrationToken !== undefined) await this.useToken(trx, userId, registrationToken, false);
      return true;
    });
    if (!upgraded) throw new HearthError(400, 'M_USER_IN_USE', 'User ID already taken.');
    this.deps.onGuestUpgraded?.(userId);
    return userId;
  }

  private async useToken(trx: Kysely<Schema>, userId: string, token: string, admin: boolean): Promise<void> {
    const used = await this.deps.registrationTokens.consume(trx, token);
    if (!used) throw new RegistrationTokenUsedUp();
    if (used.makesAdmin && !admin) await setAdmin(trx, userId, true);
  }
}
