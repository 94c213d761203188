// Profiles: display name and avatar URL of local users. A change is stored, then handed to the
// room server (through `onProfileChange`) so the user's member events follow it. A lookup of a
// local user unknown here first asks the application services (`appServiceQueries`), which may
// create the user on demand.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isMxcUri, isUserId, parseUserId, serverNameOf } from '../protocol/ids.js';
import type { Schema } from '../storage/schema.js';
import { accountExists, insertProfile, selectProfile, updateProfile, type ProfileRow } from '../storage/user-data/profiles.js';

/** Limits as the reference server keeps them. */
export const MAX_DISPLAYNAME_LENGTH = 256;
export const MAX_AVATAR_URL_LENGTH = 1000;

export interface Profile {
  readonly displayname: string | null;
  readonly avatar_url: string | null;
}

export interface ProfileServiceDeps {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  /** Called after a change is stored; the room server updates the user's member events. */
  readonly onProfileChange?: (userId: string, profile: Profile) => Promise<void> | void;
  /** Another server's user's profile, asked of their server (federation); undefined: no such user. */
  readonly remote?: (userId: string) => Promise<Profile | undefined>;
  /** Asks the application services about an unknown local user; whether one created it meanwhile. */
  readonly appServiceQueries?: { queryUser(userId: string): Promise<boolean> };
}

/** Who asks: only the user themselves (or a server admin) may change a profile. */
export interface ProfileActor {
  readonly userId: string;
  readonly isAdmin?: boolean;
}

export class ProfileService {
  constructor(private readonly deps: ProfileServiceDeps) {}

  /**
   * The profile a new account starts with: the display name asked for at registration, else its
   * localpart; no avatar. Fits the accounts service's `onRegister` hook; `db` may be a transaction.
   */
  async createProfile(userId: string, localpart: string, displayname?: string, db: Kysely<Schema> = this.deps.db): Promise<void> {
    const name = displayname?.trim();
    await insertProfile(db, { userId, displayname: name ? name.slice(0, MAX_DISPLAYNAME_LENGTH) : localpart, avatarUrl: null });
  }

  /** The stored profile, or undefined for a user without one (room server: member event content). */
  async profileOf(userId: string): Promise<Profile | undefined> {
    const row = await selectProfile(this.deps.db, userId);
    return row && toProfile(row);
  }

  /** A local user's stored profile (federation's /query/profile); undefined: no such user, even on demand. */
  async localProfile(userId: string): Promise<Profile | undefined> {
    return (await this.profileOf(userId)) ?? ((await this.queried(userId)) ? this.profileOf(userId) : undefined);
  }

  /**
   * GET /profile/{userId}: the fields that are set. As the spec and Synapse answer: 404 M_NOT_FOUND
   * for an unknown user and for one with neither field set; 400 M_INVALID_PARAM for a malformed id.
   */
  async getProfile(userId: string): Promise<{ displayname?: string; avatar_url?: string }> {
    const profile = await this.requireProfile(userId);
    if (profile.displayname === null && profile.avatar_url === null) throw HearthError.notFound('Profile not found');
    return {
      ...(profile.displayname !== null ? { displayname: profile.displayname } : {}),
      ...(profile.avatar_url !== null ? { avatar_url: profile.avatar_url } : {}),
    };
  }

  /**
   * GET /profile/{userId}/{field}: the value, or undefined when the user has none (the route
   * answers `{}` then, as Synapse does); 404 M_NOT_FOUND only for an unknown user.
   */
  async getField(userId: string, field: keyof Profile): Promise<string | undefined> {
    return (await this.requireProfile(userId))[field] ?? undefined;
  }

  async setDisplayname(actor: ProfileActor, userId: string, value: unknown): Promise<Profile> {
    if (typeof value !== 'string') throw HearthError.invalidParam("'displayname' must be a string");
    if (value.length > MAX_DISPLAYNAME_LENGTH) {
      throw HearthError.invalidParam(`Display name is too long (max ${MAX_DISPLAYNAME_LENGTH})`);
    }
    const trimmed = value.trim();
    return this.change(actor, userId, { displayname: trimmed === '' ? null : trimmed });
  }

  async setAvatarUrl(actor: ProfileActor, userId: string, value: unknown): Promise<Profile> {
    if (typeof value !== 'string') throw HearthError.invalidParam("'avatar_url' must be a string");
    if (value.length > MAX_AVATAR_URL_LENGTH) {
      throw HearthError.invalidParam(`Avatar URL is too long (max ${MAX_AVATAR_URL_LENGTH})`);
    }
    if (value !== '' && !isMxcUri(value)) throw HearthError.invalidParam("'avatar_url' must be an mxc:// URI");
    return this.change(actor, userId, { avatarUrl: value === '' ? null : value });
  }

  private async change(
    actor: ProfileActor,
    userId: string,
    change: { displayname?: string | null; avatarUrl?: string | null },
  ): Promise<Profile> {
    const target = parseUserId(userId);
    if (serverNameOf(target) !== this.deps.serverName) {
      throw HearthError.forbidden('Cannot change the profile of a user on another server');
    }
    if (actor.userId !== userId && actor.isAdmin !== true) {
      throw HearthError.forbidden("Cannot change another user's profile");
    }
    if (actor.userId !== userId && !(await this.known(userId))) throw HearthError.notFound('Unknown user');
    const before = await selectProfile(this.deps.db, userId);
    const stored = toProfile(await updateProfile(this.deps.db, userId, change));
    const changed =
      before === undefined || before.displayname !== stored.displayname || before.avatarUrl !== stored.avatar_url;
    if (changed) await this.deps.onProfileChange?.(userId, stored);
    return stored;
  }

  private async known(userId: string): Promise<boolean> {
    return (await selectProfile(this.deps.db, userId)) !== undefined || (await accountExists(this.deps.db, userId));
  }

  private async requireProfile(userId: string): Promise<Profile> {
    if (!isUserId(userId, { allowNonCompliant: true })) throw HearthError.invalidParam('Invalid user ID');
    if (this.deps.remote !== undefined && serverNameOf(userId) !== this.deps.serverName) {
      const profile = await this.deps.remote(userId);
      if (profile === undefined) throw HearthError.notFound('Profile not found');
      return profile;
    }
    const profile = (await this.storedProfile(userId)) ?? ((await this.queried(userId)) ? await this.storedProfile(userId) : undefined);
    if (profile === undefined) throw HearthError.notFound('Profile not found');
    return profile;
  }

  private async storedProfile(userId: string): Promise<Profile | undefined> {
    const row = await selectProfile(this.deps.db, userId);
    if (row) return toProfile(row);
    // An account made before profiles were kept still has an (empty) profile.
    if (await this.known(userId)) return { displayname: null, avatar_url: null };
    return undefined;
  }

  /** Whether an application service created the unknown user when asked. */
  private async queried(userId: string): Promise<boolean> {
    return (await this.deps.appServiceQueries?.queryUser(userId)) === true;
  }
}

function toProfile(row: ProfileRow): Profile {
  return { displayname: row.displayname, avatar_url: row.avatarUrl };
}
