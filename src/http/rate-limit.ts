// Rate limits, after the reference server's `rc_*` settings: named limits, each a token bucket per
// user (or per client address, or per account for logins) that holds up to `burst_count` actions
// and drains at `per_second`. A route names the limit it counts against (`RouteDef.rateLimit`);
// routes that name none are never limited, so syncs, to-device messages, keys, receipts and typing
// never see a 429.
//
// A request takes its tokens before its handler runs, so concurrent requests cannot slip past a
// full bucket, and gives back those its outcome does not count: like the reference server, only
// a sent event, a created room, a join, an invite, a completed registration or a successful login
// counts, and a failed login only against the account's failed attempts. Media uploads count
// every attempt, as the reference server's: a refused upload has cost its bytes already.

import { HearthError } from '../protocol/errors.js';
import type { Requester } from './route.js';

/** The limits counted per user (kept only when the request succeeds, but for media). */
type PerUserLimit = 'message' | 'room_creation' | 'joins' | 'invites' | 'media_create';

/** The limits routes may name. */
export type RateLimitName =
  | 'message'
  | 'room_creation'
  | 'joins'
  | 'invites'
  | 'login'
  | 'registration'
  | 'registration_token_validity'
  | 'media_create';

export interface BucketSettings {
  /** Actions per second the bucket drains (the long-run rate). */
  readonly per_second: number;
  /** Actions the bucket holds (the burst allowed at once). */
  readonly burst_count: number;
}

/** Shaped as `client_api.rate_limiting` in the configuration. */
export interface RateLimitSettings {
  readonly message: BucketSettings;
  readonly room_creation: BucketSettings;
  readonly joins: BucketSettings;
  readonly invites: BucketSettings;
  readonly login: {
    readonly address: BucketSettings;
    readonly account: BucketSettings;
    readonly failed_attempts: BucketSettings;
  };
  readonly registration: BucketSettings;
  readonly registration_token_validity: BucketSettings;
  readonly media_create: BucketSettings;
}

export interface RateLimiterOptions {
  readonly limits: RateLimitSettings;
  readonly exemptUserIds?: Iterable<string>;
  /** Qualifies bare user names in login requests, so `alice` and `@alice:hs` share a bucket. */
  readonly serverName?: string;
  /** Whether an appservice's users are limited (its registration's `rate_limited`); default yes. */
  readonly appserviceRateLimited?: (appserviceId: string) => boolean;
  /**
   * A user's own limits in place of the configured ones for the per-user limits (the admin API's
   * override_ratelimit); 0 per second with a burst of 0 exempts the user.
   */
  readonly userOverride?: (userId: string) => BucketSettings | undefined;
  readonly now?: () => number;
}

/** A 429 that knows which limit refused it, for the log. */
export class RateLimitError extends HearthError {
  constructor(
    readonly limit: string,
    retryAfterMs: number,
  ) {
    super(429, 'M_LIMIT_EXCEEDED', 'Too Many Requests', { retry_after_ms: retryAfterMs });
  }
}

interface Level {
  /** Actions counted, as of `at`. */
  count: number;
  at: number;
}

/** Below this many keys a bucket set is never swept. */
const MIN_SWEEP_AT = 1024;
/** At most this many keys per limit; past it the oldest tenth are dropped (they start afresh). */
const MAX_KEYS = 100_000;

/** One limit's buckets, by key. */
export class Buckets {
  private readonly levels = new Map<string, Level>();
  private readonly perMs: number;
  private readonly burst: number;
  private sweepAt = MIN_SWEEP_AT;

  constructor(
    readonly name: string,
    settings: BucketSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = settings.per_second / 1000;
    this.burst = settings.burst_count;
  }

  /**
   * Counts one action for `key`: 0 when allowed, else the milliseconds until one would be.
   * `settings` replaces the limit's own for this key (a user's override).
   */
  take(key: string, settings?: BucketSettings): number {
    const perMs = settings === undefined ? this.perMs : settings.per_second / 1000;
    const burst = settings === undefined ? this.burst : settings.burst_count;
    const now = this.now();
    let level = this.levels.get(key);
    if (level === undefined) {
      if (this.levels.size >= this.sweepAt) this.sweep(now);
      level = { count: 0, at: now };
      this.levels.set(key, level);
    }
    const count = Math.max(0, level.count - (now - level.at) * perMs);
    // The epsilon keeps float error (0.6 / 0.002 = 300.00000000000006) from adding a millisecond.
    if (count + 1 > burst) return perMs > 0 ? Math.max(1, Math.ceil((count + 1 - burst) / perMs - 1e-6)) : 60_000;
    level.count = count + 1;
    level.at = now;
    return 0;
  }

  /** Gives back an action taken for `key` that did not count after all. */
  giveBack(key: string): void {
    const level = this.levels.get(key);
    if (level !== undefined) level.count = Math.max(0, level.count - 1);
  }

  /** Keys tracked (for tests of the sweep). */
  get size(): number {
    return this.levels.size;
  }

  /**
   * Drops drained buckets; then, if still too many, the oldest tenth. The next sweep waits until
   * the map doubles (or refills to the cap), so sweeping costs a constant per new key.
   */
  private sweep(now: number): void {
    for (const [key, level] of this.levels) {
      if (level.count - (now - level.at) * this.perMs <= 0) this.levels.delete(key);
    }
    if (this.levels.size >= MAX_KEYS) {
      let excess = this.levels.size - MAX_KEYS * 0.9;
      for (const key of this.levels.keys()) {
        if (excess-- <= 0) break;
        this.levels.delete(key);
      }
    }
    this.sweepAt = Math.min(MAX_KEYS, Math.max(MIN_SWEEP_AT, this.levels.size * 2));
  }
}

/** When a taken token stays counted. */
type Keep = 'always' | 'success' | 'forbidden';

/** Tokens a request holds until its outcome is known. */
export interface Charge {
  readonly buckets: Buckets;
  readonly key: string;
  readonly keep: Keep;
  /** The user's own limits, when overridden. */
  readonly settings?: BucketSettings;
}

export interface ChargeContext {
  readonly requester: Requester | undefined;
  /** The client's address (see ClientAddresses). */
  readonly address: string;
  /** The parsed JSON body, for the account a login names. */
  readonly body: unknown;
}

const NO_CHARGES: readonly Charge[] = [];

export class RateLimiter {
  private readonly exempt: ReadonlySet<string>;
  /** The limits counted per user (per address before login). */
  private readonly perUser: Readonly<Record<PerUserLimit, Buckets>>;
  private readonly loginAddress: Buckets;
  private readonly loginAccount: Buckets;
  private readonly loginFailures: Buckets;
  private readonly registration: Buckets;
  private readonly tokenValidity: Buckets;

  constructor(private readonly options: RateLimiterOptions) {
    const { limits } = options;
    const now = options.now ?? Date.now;
    this.exempt = new Set(options.exemptUserIds ?? []);
    this.perUser = {
      message: new Buckets('message', limits.message, now),
      room_creation: new Buckets('room_creation', limits.room_creation, now),
      joins: new Buckets('joins', limits.joins, now),
      invites: new Buckets('invites', limits.invites, now),
      media_create: new Buckets('media_create', limits.media_create, now),
    };
    this.loginAddress = new Buckets('login.address', limits.login.address, now);
    this.loginAccount = new Buckets('login.account', limits.login.account, now);
    this.loginFailures = new Buckets('login.failed_attempts', limits.login.failed_attempts, now);
    this.registration = new Buckets('registration', limits.registration, now);
    this.tokenValidity = new Buckets('registration_token_validity', limits.registration_token_validity, now);
  }

  /** Admins, listed users and the users of appservices registered with `rate_limited: false`. */
  isExempt(requester: Requester): boolean {
    if (requester.isAdmin || this.exempt.has(requester.userId)) return true;
    const appservice = requester.appserviceId;
    return appservice !== undefined && this.options.appserviceRateLimited?.(appservice) === false;
  }

  /**
   * Takes the tokens a request to a route limited by `limit` needs; throws RateLimitError (429)
   * when a bucket is full. Pass what it returns to `settle` once the outcome is known.
   */
  charge(limit: RateLimitName, ctx: ChargeContext): readonly Charge[] {
    if (ctx.requester !== undefined && this.isExempt(ctx.requester)) return NO_CHARGES;
    switch (limit) {
      case 'message':
      case 'room_creation':
      case 'joins':
      case 'invites':
      case 'media_create': {
        const override = ctx.requester === undefined ? undefined : this.options.userOverride?.(ctx.requester.userId);
        if (override !== undefined && override.per_second === 0 && override.burst_count === 0) return NO_CHARGES;
        const keep = limit === 'media_create' ? 'always' : 'success';
        const charge: Charge = { buckets: this.perUser[limit], key: ctx.requester?.userId ?? ctx.address, keep };
        return this.takeAll([override === undefined ? charge : { ...charge, settings: override }]);
      }
      case 'registration':
        return this.takeAll([{ buckets: this.registration, key: ctx.address, keep: 'success' }]);
      case 'registration_token_validity':
        return this.takeAll([{ buckets: this.tokenValidity, key: ctx.address, keep: 'always' }]);
      case 'login': {
        const charges: Charge[] = [{ buckets: this.loginAddress, key: ctx.address, keep: 'always' }];
        const account = loginAccount(ctx.body, this.options.serverName);
        if (account !== undefined) {
          charges.push(
            { buckets: this.loginFailures, key: account, keep: 'forbidden' },
            { buckets: this.loginAccount, key: account, keep: 'success' },
          );
        }
        return this.takeAll(charges);
      }
    }
  }

  /** Gives back the tokens the outcome (the reply's HTTP status) does not count. */
  settle(charges: readonly Charge[], status: number): void {
    for (const charge of charges) {
      const kept = charge.keep === 'always' || (charge.keep === 'success' ? status < 400 : status === 403);
      if (!kept) charge.buckets.giveBack(charge.key);
    }
  }

  private takeAll(charges: readonly Charge[]): readonly Charge[] {
    for (let i = 0; i < charges.length; i++) {
      const { buckets, key, settings } = charges[i]!;
      const wait = buckets.take(key, settings);
      if (wait > 0) {
        for (let j = 0; j < i; j++) charges[j]!.buckets.giveBack(charges[j]!.key);
        throw new RateLimitError(buckets.name, wait);
      }
    }
    return charges;
  }
}

function stringField(object: unknown, name: string): string | undefined {
  if (typeof object !== 'object' || object === null) return undefined;
  const value = (object as Record<string, unknown>)[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The account a login request names, as a bucket key: the user ID, qualified and lower-cased (as
 * the reference server keys it), or `medium:address` for a third-party identifier. Undefined for
 * logins that name no account (token logins).
 */
export function loginAccount(body: unknown, serverName: string | undefined): string | undefined {
  const identifier = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['identifier'] : undefined;
  const type = stringField(identifier, 'type');
  let user: string | undefined;
  if (type === 'm.id.thirdparty') {
    const medium = stringField(identifier, 'medium');
    const address = stringField(identifier, 'address');
    return medium !== undefined && address !== undefined ? `${medium}:${address.toLowerCase()}` : undefined;
  }
  if (type === 'm.id.user') user = stringField(identifier, 'user');
  else if (type === undefined) user = stringField(body, 'user');
  if (user === undefined) return undefined;
  const qualified = user.startsWith('@') || serverName === undefined ? user : `@${user}:${serverName}`;
  return qualified.toLowerCase();
}
