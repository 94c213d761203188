// Account creation: the /register endpoint's rules (kinds, flows, username checks) and the one
// place where accounts are inserted, shared by registration, the admin API and the CLI.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { validateLocalpart, type ServerName } from '../protocol/ids.js';
import type { Schema } from '../storage/schema.js';
import { insertUser, localpartTaken, nextCounterValue, setAdmin, upgradeGuestUser } from '../storage/accounts/users.js';
import type { Devices } from './devices.js';
import { checkNewPassword, hashPassword } from './passwords.js';
import type { RegistrationTokens } from './registration-tokens.js';
import { STAGE_DUMMY, STAGE_REGISTRATION_TOKEN, type UiaRequest, type UserInteractiveAuth } from './uia.js';

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

  /** A guest upgrade names the guest's own localpart, which is then neither reserved nor taken. */
  private checkGuestUpgrade(username: string | undefined, guestUserId: string): void {
    if (username === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'A guest upgrading its account must give its username');
    if (`@${username}:${this.deps.serverName}` !== guestUserId) {
      throw HearthError.forbidden(`A guest can only upgrade to its own user ID, ${guestUserId}`);
    }
  }

  async register(req: RegisterRequest): Promise<RegisterResult> {
    if (req.kind === 'guest') return this.registerGuest(req);
    const flows = await this.flows(isJsonObject(req.auth) && typeof req.auth['session'] === 'string');
    // The spec wants bad or taken usernames refused before authentication starts.
    if (req.password !== undefined) checkNewPassword(req.password);
    if (req.guestUserId !== undefined) this.checkGuestUpgrade(req.username?.toLowerCase(), req.guestUserId);
    else if (req.username !== undefined) await this.checkUsername(req.username.toLowerCase());

    const kept: JsonObject = {};
    if (req.username !== undefined) kept['username'] = req.username;
    if (req.guestUserId !== undefined) kept['guest_user_id'] = req.guestUserId;
    if (req.deviceId !== undefined) kept['device_id'] = req.deviceId;
    if (req.initialDeviceDisplayName !== undefined) kept['initial_device_display_name'] = req.initialDeviceDisplayName;
    if (req.inhibitLogin !== undefined) kept['inhibit_login'] = req.inhibitLogin;
    const uiaRequest: UiaRequest = { operation: 'POST /register', userId: null, flows, auth: req.auth, request: kept };
    const session = await this.deps.uia.authenticate(uiaRequest);

    // A request that carries only `auth` continues with the parameters given earlier in the session.
    const stored = (Object.keys(kept).length === 0 ? session.params['request'] : kept) as JsonObject | undefined;
    const username = typeof stored?.['username'] === 'string' ? stored['username'].toLowerCase() : undefined;
    const guestUserId = typeof stored?.['guest_user_id'] === 'string' ? stored['guest_user_id'] : undefined;
    if (req.password === undefined) throw new HearthError(400, 'M_MISSING_PARAM', 'Missing password');
    if (guestUserId !== undefined) this.checkGuestUpgrade(username, guestUserId);
    else if (username !== undefined) await this.checkUsername(username);

    const token = session.completed.includes(STAGE_REGISTRATION_TOKEN) ? session.params['registration_token'] : undefined;
    const passwordHash = await hashPassword(req.password, this.deps.bcryptCost);
    const registrationToken = typeof token === 'string' ? token : undefined;
    let userId: string;
    try {
      userId =
        guestUserId !== undefined
          ? await this.upgradeGuest(guestUserId, passwordHash, registrationToken)
          : await this.createAccount({
              localpart: username ?? null,
              passwordHash,
              admin: false,
              guest: false,
              ...(registrationToken !== undefined ? { registrationToken } : {}),
            });
    } catch (err) {
      if (!(err instanceof RegistrationTokenUsedUp)) throw err;
      return this.deps.uia.retractStage(uiaRequest, session, STAGE_REGISTRATION_TOKEN, 'M_UNAUTHORIZED', 'Invalid registration token');
    }
    await this.deps.uia.finish(session);

    if (stored?.['inhibit_login'] === true) return { userId };
    const deviceId = typeof stored?.['device_id'] === 'string' ? stored['device_id'] : undefined;
    const name = stored?.['initial_device_display_name'];
    const login = await this.deps.devices.startSession(userId, {
      deviceId,
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
