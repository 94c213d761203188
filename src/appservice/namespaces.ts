// The registered application services and what each claims: lookups by token and id, and whether
// a user, alias or room is in a service's namespaces. Pure: built once from loaded registrations.

import { ConfigError } from '../config/index.js';
import { type UserId, parseUserId } from '../protocol/ids.js';
import { registrationConflicts } from './conflicts.js';
import type { AppServiceRegistration, Namespace, NamespaceKind } from './registration.js';

interface ExclusiveClaim {
  readonly registration: AppServiceRegistration;
  readonly pattern: RegExp;
}

export class AppServices {
  readonly all: readonly AppServiceRegistration[];
  private readonly asTokens = new Map<string, AppServiceRegistration>();
  private readonly ids = new Map<string, AppServiceRegistration>();
  private readonly senders = new Map<string, AppServiceRegistration>();
  private readonly exclusiveUsers: readonly ExclusiveClaim[];
  private readonly exclusiveAliases: readonly ExclusiveClaim[];

  /** Throws ConfigError when the registrations conflict (as loadRegistrations would have). */
  constructor(
    registrations: readonly AppServiceRegistration[],
    readonly serverName: string,
  ) {
    const issues = registrationConflicts(
      registrations.map((registration) => ({ source: `application service "${registration.id}"`, registration })),
      serverName,
    );
    if (issues.length > 0) throw new ConfigError(issues, 'app_service_config_files');
    this.all = Object.freeze([...registrations]);
    for (const r of registrations) {
      this.asTokens.set(r.as_token, r);
      this.ids.set(r.id, r);
      this.senders.set(this.senderOf(r), r);
    }
    this.exclusiveUsers = exclusiveClaims(registrations, 'users');
    this.exclusiveAliases = exclusiveClaims(registrations, 'aliases');
  }

  get size(): number {
    return this.all.length;
  }

  /** The service that sends this access token. */
  byAsToken(token: string): AppServiceRegistration | undefined {
    return this.asTokens.get(token);
  }

  byId(id: string): AppServiceRegistration | undefined {
    return this.ids.get(id);
  }

  /** The service's own user, `@sender_localpart:server`. */
  senderOf(registration: AppServiceRegistration): UserId {
    return parseUserId(`@${registration.sender_localpart}:${this.serverName}`);
  }

  /** The service whose own user this is. */
  bySender(userId: string): AppServiceRegistration | undefined {
    return this.senders.get(userId);
  }

  /**
   * Whether the user is in one of the service's user namespaces, exclusive or not. The service's
   * own user is not counted: see isSenderOrInUserNamespace.
   */
  isInterestedInUser(registration: AppServiceRegistration, userId: string): boolean {
    return matchesAny(registration.namespaces.users, userId);
  }

  /** Whether the service may act as the user, and hears of it: its own user or one of its namespaces. */
  isSenderOrInUserNamespace(registration: AppServiceRegistration, userId: string): boolean {
    const sender = `@${registration.sender_localpart}:${this.serverName}`;
    return userId === sender || this.isInterestedInUser(registration, userId);
  }

  isInterestedInAlias(registration: AppServiceRegistration, alias: string): boolean {
    return matchesAny(registration.namespaces.aliases, alias);
  }

  isInterestedInRoom(registration: AppServiceRegistration, roomId: string): boolean {
    return matchesAny(registration.namespaces.rooms, roomId);
  }

  /**
   * The service that claims the user for itself, which no one else may register: its own user, or
   * one matched by an exclusive user namespace.
   */
  exclusiveOwnerOfUser(userId: string): AppServiceRegistration | undefined {
    return this.senders.get(userId) ?? firstClaim(this.exclusiveUsers, userId);
  }

  /** The service that claims the alias for itself, which no one else may create. */
  exclusiveOwnerOfAlias(alias: string): AppServiceRegistration | undefined {
    return firstClaim(this.exclusiveAliases, alias);
  }
}

function matchesAny(namespaces: readonly Namespace[], id: string): boolean {
  return namespaces.some((ns) => ns.pattern.test(id));
}

function exclusiveClaims(registrations: readonly AppServiceRegistration[], kind: NamespaceKind): ExclusiveClaim[] {
  return registrations.flatMap((registration) =>
    registration.namespaces[kind].filter((ns) => ns.exclusive).map((ns) => ({ registration, pattern: ns.pattern })),
  );
}

function firstClaim(claims: readonly ExclusiveClaim[], id: string): AppServiceRegistration | undefined {
  return claims.find((c) => c.pattern.test(id))?.registration;
}
