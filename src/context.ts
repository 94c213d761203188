// The one place where the server's objects are made and wired from the configuration: the
// database, the signing key, the notifier, the services with their routes, the HTTP app and its
// listeners. Everything else receives what it needs from here.

import { mkdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { healthRoutes, databaseProbe } from './admin/health.js';
import { metricsRoutes } from './admin/metrics.js';
import type { ServerMetrics } from './server/metrics.js';
import { appServiceAuthenticator } from './appservice/authenticator.js';
import { checkNotExclusive } from './appservice/claims.js';
import { HearthError } from './protocol/errors.js';
import { serviceHttp } from './appservice/http.js';
import { loadAppServices } from './appservice/load.js';
import { AppServicePusher } from './appservice/pusher.js';
import { ThirdPartyLookups } from './appservice/third-party.js';
import { AppServiceQueryClient } from './appservice/queries.js';
import { appServiceRoutes } from './client/appservice/ping.js';
import { thirdPartyRoutes } from './client/appservice/third-party.js';
import { roomAliasesFor } from './appservice/interest.js';
import { joinedMembersOf } from './storage/appservice/queues.js';
import type { AppServices } from './appservice/namespaces.js';
import { accountRoutes } from './client/account/index.js';
import { serverInfoRoutes } from './client/server-info/index.js';
import type { HearthConfig } from './config/index.js';
import { keyServerRoutes } from './federation/key-server.js';
import { buildHttpApp } from './http/app.js';
import { RateLimiter } from './http/rate-limit.js';
import type { Authenticator, RouteDef, ServerAuthenticator } from './http/route.js';
import type { SigningKey } from './protocol/signing.js';
import { type BoundListener, type ListenerSpec, Listeners } from './server/listeners.js';
import { setUpLogging } from './server/logging.js';
import { loadOrCreateSigningKey } from './server/signing-key.js';
import { packageVersion } from './server/package-version.js';
import { type Database, explainDatabaseFailure, openDatabase, probeDatabase } from './storage/database.js';
import { migrateToLatest } from './storage/migrations/index.js';
import type { Schema } from './storage/schema.js';
import { currentStreamPositions } from './streams/positions.js';
import type { StreamBus } from './streams/bus.js';
import { InProcessBus } from './streams/in-process-bus.js';
import { DeviceListTracker } from './sync/device-lists.js';
import { SyncService } from './sync/sync-service.js';
import { roomRoutes } from './client/rooms/index.js';
import { withRemoteDirectory } from './client/directory/remote-public-rooms.js';
import { syncRoutes } from './client/sync/index.js';
import { userDataRoutes } from './client/user-data/index.js';
import { ErasedUsers } from './rooms/erased-users.js';
import { KnownFirstKeyRing, StaticKeyRing, type KeyRing } from './rooms/input/key-ring.js';
import type { RemoteEvents } from './rooms/input/remote-events.js';
import { RoomService } from './rooms/service.js';
import { isJoinedTo, usersInPublicRooms, usersSharingRooms } from './storage/rooms/memberships.js';
import { serverSharesRoomWith, serverSharesRoomWithSince } from './storage/federation/room-servers.js';
import { AccountService, type AccountServiceDeps } from './users/accounts.js';
import { AccountDataService } from './users/account-data.js';
import { FilterService } from './users/filters.js';
import { PresenceService } from './users/presence.js';
import { ProfileService } from './users/profiles.js';
import { PushRuleService } from './users/push-rules.js';
import { ReceiptService } from './users/receipts.js';
import { ToDeviceService } from './users/to-device.js';
import { TypingService } from './users/typing.js';
import { UserDirectoryService } from './users/user-directory.js';
import { DeviceKeyService } from './users/device-keys.js';
import { RemoteDeviceLists } from './users/remote-device-lists.js';
import { keyRoutes } from './client/keys/index.js';
import { openIdRoutes } from './client/account/openid.js';
import { pusherRoutes } from './client/account/pushers.js';
import { adminMediaRoutes } from './client/admin/media.js';
import { whoisRoutes } from './client/admin/whois.js';
import { adminUserRoutes } from './client/admin/users.js';
import { registrationTokenRoutes } from './client/admin/registration-tokens.js';
import { serverVersionRoutes } from './client/admin/server.js';
import { AdminUserService } from './admin/users.js';
import { AdminRegistrationTokens } from './admin/registration-tokens.js';
import { RateLimitOverrides } from './admin/rate-limit-overrides.js';
import { adminRoomRoutes } from './client/admin/rooms.js';
import { eventReportRoutes } from './client/admin/event-reports.js';
import { backgroundUpdateRoutes } from './client/admin/background-updates.js';
import { AdminRoomViews } from './rooms/admin/room-details.js';
import { EventReports } from './rooms/admin/event-reports.js';
import { RoomShutdowns } from './rooms/admin/shutdown.js';
import { legacyRoutes } from './client/legacy/index.js';
import { mediaConfigRoutes } from './client/media/config.js';
import { mediaRoutes } from './client/media/routes.js';
import { previewRoutes } from './client/media/preview.js';
import { MediaService } from './media/service.js';
import { UrlFetcher } from './media/url-fetcher.js';
import { UrlPreviewService } from './media/url-preview.js';
import { openIdUserInfoRoutes } from './federation/openid.js';
import { FederationClient, type FederationRequest } from './federation/client.js';
import { federationCheckRoutes } from './federation/check-routes.js';
import { EduOutbox, toDeviceOutbound } from './federation/edu-outbox.js';
import { DeviceListEdus } from './federation/device-list-edus.js';
import { EduSender } from './federation/edu-sender.js';
import { eduHandlers } from './federation/edus.js';
import { federationEventRoutes } from './federation/event-routes.js';
import { FederationRemoteHierarchy, federationHierarchyRoutes } from './federation/hierarchy.js';
import { federationMembershipRoutes } from './federation/membership-routes.js';
import { FederationKeyRing } from './federation/key-ring.js';
import { notaryRoutes } from './federation/notary.js';
import { federationQueryRoutes } from './federation/query-routes.js';
import { remoteDeviceListSource, remoteKeys } from './federation/remote-keys.js';
import { remoteAlias, remoteProfile, remotePublicRooms } from './federation/remote-queries.js';
import { FederationMembership } from './federation/membership-client.js';
import { federationUserRoutes } from './federation/user-routes.js';
import { federationMediaRoutes, remoteMediaSource } from './federation/media.js';
import { FederationRemoteEvents } from './federation/remote-events.js';
import { serverAuthenticator } from './federation/request-auth.js';
import type { DnsResolver } from './federation/resolve.js';
import { transactionRoutes } from './federation/transaction-routes.js';
import { TransactionReceiver } from './federation/transactions.js';
import { FederationSender } from './federation/sender.js';
import { requestAuthorization } from './protocol/request-auth.js';
import type { JsonValue } from './protocol/json.js';
import { RoomUpgrades } from './rooms/upgrade.js';
import { EventStreamService } from './sync/event-stream.js';
import { LegacyInitialSync } from './sync/initial-sync.js';
import { OpenIdService } from './users/openid.js';
import { PusherService } from './users/pushers.js';
import { WhoisService } from './users/whois.js';
import { roomKeyRoutes } from './client/room-keys/index.js';
import { CrossSigningService, passwordAuth } from './users/cross-signing.js';
import { KeyBackupService } from './users/key-backup.js';
import { SearchService } from './rooms/search-service.js';
import { PushActions } from './push/actions.js';
import { PushSender } from './push/sender.js';
import { notificationRoutes } from './client/account/notifications.js';
import { searchRoutes } from './client/search/index.js';

/** The server's log, for services (which never see Fastify); details are structured fields. */
export interface Log {
  debug(message: string, details?: object): void;
  info(message: string, details?: object): void;
  warn(message: string, details?: object): void;
  error(message: string, details?: object): void;
}

/** What every part of the server is built from. */
export interface ServerCore {
  readonly config: HearthConfig;
  readonly serverName: string;
  readonly database: Database<Schema>;
  readonly db: Kysely<Schema>;
  readonly signingKey: SigningKey;
  readonly notifier: StreamBus;
  /** Writes to the HTTP app's logger once it exists (services are built before it). */
  readonly log: Log;
  /** The registered application services (`app_service_config_files`). */
  readonly appServices: AppServices;
}

/** A Log that forwards to the app's logger once `attach` is called, and drops lines before. */
class AppLog implements Log {
  private target: FastifyInstance['log'] | undefined;
  attach(target: FastifyInstance['log']): void {
    this.target = target;
  }
  debug(message: string, details: object = {}): void {
    this.target?.debug(details, message);
  }
  info(message: string, details: object = {}): void {
    this.target?.info(details, message);
  }
  warn(message: string, details: object = {}): void {
    this.target?.warn(details, message);
  }
  error(message: string, details: object = {}): void {
    this.target?.error(details, message);
  }
}

/**
 * A part of the server: the routes it serves, optionally the access-token check (at most one part
 * gives it), and what to do when the server stops.
 */
export interface ServerPart {
  readonly name: string;
  readonly routes: readonly RouteDef[];
  readonly authenticate?: Authenticator;
  /** Checks other servers' request signatures (at most one part gives it). */
  readonly authenticateServer?: ServerAuthenticator;
  /** The listeners stopped accepting: end long waits (long-polls) so requests can finish. */
  stopping?(): void;
  /** Requests have drained; the database is still open. */
  close?(): Promise<void> | void;
}

/** The services, for the command line, startup tasks and tests. */
export interface Services {
  readonly accounts: AccountService;
  readonly rooms: RoomService;
  readonly profiles: ProfileService;
  readonly accountData: AccountDataService;
  readonly filters: FilterService;
  readonly typing: TypingService;
  readonly receipts: ReceiptService;
  readonly toDevice: ToDeviceService;
  readonly presence: PresenceService;
  readonly sync: SyncService;
  readonly deviceKeys: DeviceKeyService;
  /**
   * Signing keys of servers whose events the room server receives: this server's own, and any
   * added (until federation fetches them).
   */
  readonly keyRing: StaticKeyRing;
  /** Requests to other servers, signed; undefined when federation is disabled. */
  readonly federation: FederationClient | undefined;
  /** Sends this server's events to the other servers in their rooms; undefined when federation is disabled. */
  readonly federationSender: FederationSender | undefined;
  /** The push-rule pass (how far it has evaluated the events stream). */
  readonly pushActions: PushActions;
  /** Message search and its indexer (how far it has indexed). */
  readonly search: SearchService;
}

type AccountHooks = Pick<AccountServiceDeps, 'onDeactivate' | 'onDevicesDeleted' | 'onDeviceChanged' | 'checkUsername'>;

/** The account service as the configuration asks for it; every new account gets a profile. */
export function accountService(
  core: Pick<ServerCore, 'config' | 'db' | 'serverName'>,
  hooks: AccountHooks = {},
): AccountService {
  const { config } = core;
  const profiles = new ProfileService({ db: core.db, serverName: core.serverName });
  return new AccountService({
    ...hooks,
    onRegister: (userId, localpart, displayname) => profiles.createProfile(userId, localpart, displayname),
    db: core.db,
    serverName: core.serverName,
    bcryptCost: config.user_api.bcrypt_cost,
    registrationDisabled: config.client_api.registration_disabled,
    guestsDisabled: config.client_api.guests_disabled,
    registrationSharedSecret: config.client_api.registration_shared_secret,
    registrationRequiresToken: config.client_api.registration_requires_token,
    ...(config.global.well_known_client_name !== null ? { clientBaseUrl: config.global.well_known_client_name } : {}),
  });
}

/**
 * The parts, in order. To add an area, build its service from `core` (and earlier services) and
 * add one part; later parts may use the services of earlier ones.
 */
async function buildParts(
  core: ServerCore,
  options: CreateServerOptions,
  metrics?: ServerMetrics,
): Promise<{ parts: ServerPart[]; services: Services; rateLimitOverrides: RateLimitOverrides }> {
  const { config, db, serverName, notifier } = core;
  const federation = federationParts(core, options.federation);
  const isJoined = (userId: string, roomId: string) => isJoinedTo(db, userId, roomId);
  const sharing = (userId: string) => usersSharingRooms(db, userId);
  // Requests to application services: their transactions (below), and queries about local users
  // and aliases unknown here, which profiles and rooms make.
  const serviceRequests = serviceHttp({ disableTlsValidation: config.app_service_api.disable_tls_validation });
  const appServiceQueries = new AppServiceQueryClient({
    services: core.appServices,
    http: serviceRequests,
    protocolName: config.global.protocol_name,
    legacyAuthorization: config.app_service_api.legacy_authorization,
    log: core.log,
  });

  // Profiles and rooms refer to each other: a profile change rewrites member events, and member
  // events carry the profile. `rooms` is bound before any request can change a profile.
  let rooms: RoomService | undefined;
  let presence: PresenceService | undefined;
  const profiles = new ProfileService({
    db,
    serverName,
    ...(federation !== undefined ? { remote: (userId: string) => remoteProfile(federation.client, userId) } : {}),
    appServiceQueries,
    onProfileChange: async (userId, profile) => {
      await rooms?.updateMemberProfiles(userId, profile);
      await presence?.profileChanged(userId);
    },
  });
  const accountData = new AccountDataService({ db, notifier });
  const erasedUsers = await ErasedUsers.load(db);
  const rateLimitOverrides = await RateLimitOverrides.load(db);
  const keyRing = new StaticKeyRing().add(serverName, core.signingKey.keyId, {
    publicKey: core.signingKey.publicKey,
    validUntilTs: Number.MAX_SAFE_INTEGER,
  });
  const anyKeyRing: KeyRing = federation === undefined ? keyRing : new KnownFirstKeyRing(keyRing, federation.keyRing);
  const remoteEvents = options.remoteEvents ?? federation?.remoteEvents;
  rooms = new RoomService({
    db,
    dialect: core.database.dialect,
    serverName,
    signingKey: core.signingKey,
    keyRing: anyKeyRing,
    defaultRoomVersion: core.config.room_server.default_room_version,
    ...(federation !== undefined
      ? {
          remoteAlias: (alias: string) => remoteAlias(federation.client, alias),
          remoteMembership: new FederationMembership(federation.client),
          remoteHierarchy: new FederationRemoteHierarchy(federation.client, serverName),
          backfillWhenPaging: true,
          log: core.log,
        }
      : {}),
    ...(remoteEvents !== undefined ? { remoteEvents } : {}),
    notifier,
    profiles: { profile: (userId) => profiles.profileOf(userId) },
    appServiceQueries,
    ignoredUsers: (userId) => accountData.ignoredUsers(userId),
    erasedUsers,
    eventCache: { maxBytes: core.config.global.cache.max_size_estimated, maxAgeMs: core.config.global.cache.max_age },
  });
  const roomService = rooms;
  const upgrades = new RoomUpgrades({
    rooms,
    db,
    carryOver: (userId, oldRoomId, newRoomId) => accountData.carryOverToUpgradedRoom(userId, oldRoomId, newRoomId),
    log: core.log,
  });
  // Local users' typing, public receipts and presence go to the other servers as they happen; what
  // must not be lost (to-device messages, device-list and signing-key updates) is queued durably.
  const edus = federation === undefined ? undefined : new EduSender({ db, serverName, client: federation.client, log: core.log });
  const outbox =
    federation === undefined
      ? undefined
      : new EduOutbox({
          db,
          serverName,
          client: federation.client,
          log: core.log,
          ...(options.federation?.senderRetry !== undefined ? { retry: options.federation.senderRetry } : {}),
        });
  const deviceListEdus = outbox === undefined ? undefined : new DeviceListEdus({ serverName, outbox });
  presence = new PresenceService({
    db,
    notifier,
    usersSharingRooms: sharing,
    serverName,
    ...(edus ? { onChange: (u: string, c: Parameters<EduSender['presence']>[1]) => edus.presence(u, c) } : {}),
  });
  const pushRules = new PushRuleService({ accountData });
  const filters = new FilterService({ db });
  const typing = new TypingService({ notifier, isJoined, ...(edus ? { onTyping: (u: string, r: string, t: boolean) => edus.typing(u, r, t) } : {}) });
  const receipts = new ReceiptService({
    db,
    notifier,
    accountData,
    isJoined,
    eventOrder: async (roomId, eventId) => {
      const event = await roomService.reader.event(eventId);
      return event?.roomId === roomId ? event.streamOrdering : undefined;
    },
    ...(edus ? { onReceipt: (r: Parameters<EduSender['receipt']>[0]) => edus.receipt(r) } : {}),
  });
  const toDevice = new ToDeviceService({ db, notifier, serverName, ...(outbox ? { remote: toDeviceOutbound(outbox) } : {}) });
  const userDirectory = new UserDirectoryService({
    db,
    usersSharingRooms: sharing,
    usersInPublicRooms: () => usersInPublicRooms(db),
  });
  const crossSigning = new CrossSigningService({
    db,
    notifier,
    serverName,
    usersSharingRooms: sharing,
    uia: passwordAuth(db, serverName),
    ...(deviceListEdus ? { outbound: deviceListEdus } : {}),
  });
  const remoteDeviceLists =
    federation === undefined
      ? undefined
      : new RemoteDeviceLists({ db, source: remoteDeviceListSource(federation.client), sharingSince: (userId) => serverSharesRoomWithSince(db, serverName, userId), log: core.log });
  const deviceKeys = new DeviceKeyService({
    db,
    notifier,
    serverName,
    usersSharingRooms: sharing,
    crossSigning,
    ...(federation !== undefined ? { remoteKeys: remoteKeys(federation.client) } : {}),
    ...(remoteDeviceLists ? { remoteDeviceLists } : {}),
    ...(deviceListEdus ? { outbound: deviceListEdus } : {}),
  });
  const backups = new KeyBackupService({ db });
  const deviceLists = new DeviceListTracker({ db, reader: roomService.reader, notifier });
  // The device change is committed by then: a failure to announce it must not fail the request.
  const announcing = (what: string, fn: () => Promise<void>) =>
    fn().catch((err: unknown) => core.log.warn(`announcing ${what} failed`, { err: String(err) }));
  const { appServices } = core;
  const accounts = accountService(core, {
    // Users an application service claims exclusively are its to register.
    checkUsername: (localpart) => checkNotExclusive(appServices, `@${localpart}:${serverName}`),
    onDeviceChanged: (userId, deviceId) => announcing('a device change', () => deviceKeys.deviceListChanged(userId, deviceId)),
    onDevicesDeleted: (userId, deviceIds) => announcing('deleted devices', () => deviceKeys.devicesDeleted(userId, deviceIds)),
    // A deactivated account leaves every room it is in and its key backups go; an erased one's
    // events are served redacted from now on.
    onDeactivate: async (userId, { erase }) => {
      if (erase) erasedUsers.add(userId);
      await backups.deleteAll(userId).catch((err: unknown) => core.log.warn('deleting key backups on deactivation failed', { userId, err: String(err) }));
      const actor = { userId, deviceId: null };
      for (const roomId of await roomService.joinedRooms(userId)) {
        await roomService.leave(actor, roomId).catch((err: unknown) =>
          core.log.warn('leaving a room on deactivation failed', { userId, roomId, err: String(err) }),
        );
      }
    },
  });
  // Each service's own user exists before the service can act as it.
  for (const service of appServices.all) {
    const userId = appServices.senderOf(service);
    if ((await accounts.activeAccount(userId)) !== undefined) continue;
    await accounts.registerForAppService(service.id, service.sender_localpart, { inhibitLogin: true }).catch((err: unknown) => {
      // Deactivated, or made meanwhile: either way not ours to make.
      if (!(err instanceof HearthError && err.errcode === 'M_USER_IN_USE')) throw err;
    });
  }
  presence.start();
  // Push notifications: each event's push rules evaluated for the members it may notify, off the
  // send path; what notifies is listed by /notifications and sent to the users' push gateways.
  const gatewayRequests = serviceHttp({ disableTlsValidation: false, timeoutMs: 10_000 });
  const pushSender = new PushSender({
    db,
    reader: roomService.reader,
    http: gatewayRequests,
    eventsPosition: () => notifier.current().events,
    log: core.log,
    ...(options.pushRetry !== undefined ? { retry: options.pushRetry } : {}),
  });
  const pushActions = new PushActions({
    db,
    bus: notifier,
    reader: roomService.reader,
    serverName,
    pushRules,
    ignoredUsers: (userId) => accountData.ignoredUsers(userId),
    appServiceUser: (userId) => appServices.exclusiveOwnerOfUser(userId) !== undefined || appServices.bySender(userId) !== undefined,
    notified: (users) => pushSender.wake(users),
    log: core.log,
  });
  const sync = new SyncService({ db, notifier, rooms: roomService.reader, accountData, pushRules, storedNotifications: pushActions, filters, typing, receipts, toDevice, presence, deviceKeys, deviceLists });
  const legacySources = { db, notifier, rooms: roomService.reader, typing, receipts, presence, accountData };
  const eventStream = new EventStreamService({ ...legacySources, roomEvent: (actor, roomId, eventId) => roomService.getEvent(actor, roomId, eventId) });
  const openId = new OpenIdService({ db, serverName });
  // The media repository: uploads, downloads and thumbnails, files under media_api.base_path.
  const media = new MediaService({
    db,
    serverName,
    basePath: config.media_api.base_path,
    maxUploadBytes: config.media_api.max_file_size_bytes,
    maxPendingUploads: config.media_api.max_pending_uploads,
    dynamicThumbnails: config.media_api.dynamic_thumbnails,
    maxThumbnailGenerators: config.media_api.max_thumbnail_generators,
    thumbnailSizes: config.media_api.thumbnail_sizes,
    log: core.log,
    ...(federation !== undefined ? { remote: remoteMediaSource(federation.client) } : {}),
  });
  // URL previews, when enabled: pages fetched away from the blacklisted addresses.
  const previewConfig = config.media_api.url_preview;
  const preview = previewConfig.enabled
    ? new UrlPreviewService({
        fetcher: new UrlFetcher({
          blacklist: previewConfig.ip_range_blacklist,
          whitelist: previewConfig.ip_range_whitelist,
          maxBytes: previewConfig.max_spider_size,
          timeoutMs: previewConfig.timeout,
          userAgent: 'Hearth (bot; URL preview)',
        }),
        media,
        urlBlacklist: previewConfig.url_blacklist,
        log: core.log,
      })
    : undefined;
  // Third-party lookups, answered by the services that bridge each protocol.
  const thirdParty = new ThirdPartyLookups({
    services: appServices,
    http: serviceRequests,
    protocolName: config.global.protocol_name,
    legacyAuthorization: config.app_service_api.legacy_authorization,
    log: core.log,
  });
  // Events to the application services that listen for them.
  const pusher = new AppServicePusher({
    db,
    bus: notifier,
    reader: roomService.reader,
    services: appServices,
    interest: {
      joinedMembers: (roomId) => joinedMembersOf(db, roomId),
      aliases: (roomId) => roomAliasesFor(db, roomService.reader, roomId),
    },
    ephemeral: {
      typingIn: (roomId) => typing.typingIn(roomId),
      receiptsAfter: (after, upTo, limit) => receipts.receiptsAfter(after, upTo, limit),
      presenceAfter: (after, upTo, limit) => presence.changesAfter(after, upTo, limit),
      toDeviceAfter: (after, upTo, limit) => toDevice.toDeviceAfter(after, upTo, limit),
      joinedRooms: (userId) => roomService.joinedRooms(userId),
    },
    http: serviceRequests,
    protocolName: config.global.protocol_name,
    legacyAuthorization: config.app_service_api.legacy_authorization,
    log: core.log,
    ...(options.appServiceRetry !== undefined ? { retry: options.appServiceRetry } : {}),
  });
  await pusher.start();
  // The admin API's rooms: deletions left unfinished by a stop are marked failed.
  const shutdowns = new RoomShutdowns({ rooms: roomService, serverName, log: core.log });
  await shutdowns.start();
  // Message search: indexed from the events stream, apart from the send path.
  const search = new SearchService({
    db,
    dialect: core.database.dialect,
    bus: notifier,
    rooms: roomService,
    enabled: config.sync_api.search.enabled,
    language: config.sync_api.search.language,
    log: core.log,
  });
  await search.start();
  await pushSender.start();
  await pushActions.start();

  const parts: ServerPart[] = [
    {
      name: 'appservices',
      routes: [...appServiceRoutes({ queries: appServiceQueries }), ...thirdPartyRoutes({ lookups: thirdParty })],
      close: async () => {
        await pusher.stop();
        await serviceRequests.close();
      },
    },
    {
      name: 'server-info',
      routes: serverInfoRoutes(
        {
          clientBaseUrl: config.global.well_known_client_name,
          serverName: config.global.well_known_server_name,
        },
        config.room_server.default_room_version,
      ),
    },
    {
      name: 'key-server',
      routes: keyServerRoutes({
        serverName: core.serverName,
        signingKey: core.signingKey,
        validityPeriodMs: config.global.key_validity_period,
      }),
    },
    { name: 'health', routes: healthRoutes({ probe: databaseProbe(core.db as Kysely<unknown>) }) },
    {
      name: 'accounts',
      routes: accountRoutes({ accounts, appServices }),
      authenticate: appServiceAuthenticator(
        {
          byAsToken: (token) => {
            const service = appServices.byAsToken(token);
            return service && { id: service.id, senderUserId: appServices.senderOf(service), claimsUser: (userId) => appServices.isSenderOrInUserNamespace(service, userId) };
          },
          account: (userId) => accounts.activeAccount(userId),
          deviceExists: (userId, deviceId) => accounts.hasDevice(userId, deviceId),
        },
        accounts.authenticate,
      ),
    },
    {
      name: 'rooms',
      routes:
        federation === undefined
          ? roomRoutes({ rooms: roomService, upgrades, appServices })
          : withRemoteDirectory(roomRoutes({ rooms: roomService, upgrades, appServices }), {
              serverName,
              publicRooms: (server, request) => remotePublicRooms(federation.client, server, request),
            }),
    },
    {
      name: 'user-data',
      routes: userDataRoutes({ profiles, accountData, filters, typing, receipts, toDevice, presence, userDirectory, pushRules }),
      close: () => {
        typing.close();
        presence?.close();
      },
    },
    { name: 'sync', routes: syncRoutes({ sync }), stopping: () => sync.stopping() },
    { name: 'search', routes: searchRoutes({ search }), close: () => search.stop() },
    { name: 'keys', routes: [...keyRoutes({ deviceKeys, deviceLists, crossSigning }), ...roomKeyRoutes({ backups })], close: () => remoteDeviceLists?.close() },
    {
      name: 'legacy',
      routes: legacyRoutes({ eventStream, initialSync: new LegacyInitialSync(legacySources), rooms: roomService }),
      stopping: () => eventStream.stopping(),
    },
    {
      name: 'pushers',
      routes: [
        ...pusherRoutes({ pushers: new PusherService({ db, eventsPosition: () => notifier.current().events, onChange: (userId) => pushSender.pushersChanged(userId) }) }),
        ...notificationRoutes({ db, reader: roomService.reader, now: () => Date.now() }),
      ],
      close: async () => {
        await pushActions.stop();
        await pushSender.stop();
        await gatewayRequests.close();
      },
    },
    { name: 'openid', routes: [...openIdRoutes({ openId }), ...openIdUserInfoRoutes({ openId })] },
    { name: 'whois', routes: whoisRoutes({ whois: new WhoisService({ db, serverName }) }) },
    {
      name: 'admin-users',
      routes: [
        ...serverVersionRoutes({ version: packageVersion() }),
        ...adminUserRoutes({ users: new AdminUserService({ db, serverName, accounts, profiles, joinedRooms: (userId) => roomService.joinedRooms(userId), rateLimits: rateLimitOverrides }) }),
        ...registrationTokenRoutes({ tokens: new AdminRegistrationTokens({ accounts }) }),
      ],
    },
    {
      name: 'admin-rooms',
      routes: [
        ...adminRoomRoutes({ views: new AdminRoomViews(roomService.reader, serverName), shutdowns }),
        ...eventReportRoutes({ reports: new EventReports({ rooms: roomService }) }),
        ...backgroundUpdateRoutes(),
      ],
      close: () => shutdowns.close(),
    },
    // Served with federation off too: it tells an operator what turning it on would meet.
    {
      name: 'federation-check',
      routes: federationCheckRoutes({
        protocolName: config.global.protocol_name,
        disableTlsValidation: config.federation_api.disable_tls_validation,
        self: { serverName, keyId: core.signingKey.keyId, publicKey: core.signingKey.publicKey },
        ...(options.federation?.dns !== undefined ? { dns: options.federation.dns } : {}),
        ...(options.federation?.ca !== undefined ? { ca: options.federation.ca } : {}),
        ...(options.federation?.wellKnownPort !== undefined ? { wellKnownPort: options.federation.wellKnownPort } : {}),
      }),
    },
    { name: 'media-config', routes: mediaConfigRoutes({ maxUploadBytes: config.media_api.max_file_size_bytes }) },
    {
      name: 'media',
      routes: [...mediaRoutes({ media }), ...(preview !== undefined ? previewRoutes({ preview }) : []), ...adminMediaRoutes({ media, serverName })],
      close: () => media.close(),
    },
  ];
  let federationSender: FederationSender | undefined;
  if (federation !== undefined && outbox !== undefined) {
    const authenticateServer = serverAuthenticator({ serverName, keyRing: anyKeyRing });
    const sender = new FederationSender({
      db,
      bus: notifier,
      serverName,
      client: federation.client,
      log: core.log,
      maxRetries: config.federation_api.send_max_retries,
      ...(options.federation?.senderRetry !== undefined ? { retry: options.federation.senderRetry } : {}),
    });
    await sender.start();
    await outbox.start();
    federationSender = sender;
    const transactions = new TransactionReceiver({
      db,
      rooms: roomService,
      edus: eduHandlers({
        typing,
        isJoined,
        receipts,
        toDevice,
        deviceLists: deviceKeys,
        presence,
        sharesRoomWithLocalUser: (userId) => serverSharesRoomWith(db, serverName, userId),
      }),
      warn: (message, fields) => core.log.warn(message, fields),
    });
    parts.push({
      name: 'federation',
      routes: [
        ...federationQueryRoutes({ serverName, version: packageVersion(), profiles, rooms: roomService }),
        ...transactionRoutes({ transactions }),
        ...federationEventRoutes({ serverName, rooms: roomService }),
        ...federationUserRoutes({ serverName, deviceKeys, rooms: roomService, deviceListPosition: () => notifier.current().device_lists }),
        ...federationMembershipRoutes({ rooms: roomService }),
        ...federationHierarchyRoutes({ rooms: roomService }),
        ...notaryRoutes({ keyRing: federation.keyRing, serverName, signingKey: core.signingKey }),
        ...federationMediaRoutes({ media, serverName }),
      ],
      authenticateServer: async (req) => {
        const origin = await authenticateServer(req);
        sender.contacted(origin);
        outbox.contacted(origin);
        return origin;
      },
      close: async () => {
        // Closing the client abandons the requests in flight: what they carried stays queued.
        const outboxStopped = outbox.stop();
        await federation.client.close();
        await outboxStopped;
        await sender.stop();
      },
    });
  }
  if (metrics !== undefined) {
    const { username, password } = config.global.metrics.basic_auth;
    const sender = federationSender;
    metrics.watch({
      syncWaiting: () => notifier.waiting,
      rooms: () => roomService.stats,
      caches: () => ({ ...roomService.stats.caches, access_tokens: accounts.tokenCacheLookups }),
      ...(sender !== undefined && outbox !== undefined ? { federation: () => ({ pdu: sender.stats(), edu: outbox.stats() }) } : {}),
      appServices: () => pusher.stats(),
      push: () => ({ eventsBehind: Math.max(0, notifier.current().events - pushActions.consumer.position), sent: pushSender.sent, failures: pushSender.failures }),
      ...(core.database.poolStats !== undefined ? { databasePool: core.database.poolStats } : {}),
      ...(core.database.checkpointStats !== undefined ? { sqliteCheckpoints: core.database.checkpointStats } : {}),
    });
    parts.push({
      name: 'metrics',
      routes: metricsRoutes({ render: () => metrics.render(), ...(username !== null && password !== null ? { basicAuth: { username, password } } : {}) }),
      close: () => metrics.close(),
    });
  }
  return {
    parts,
    rateLimitOverrides,
    services: { accounts, rooms: roomService, profiles, accountData, filters, typing, receipts, toDevice, presence, sync, deviceKeys, keyRing, federation: federation?.client, federationSender, pushActions, search },
  };
}

export interface CreateServerOptions {
  /** Fastify's logger option; default: the `logging` targets of the configuration. */
  logger?: boolean | object;
  /** How long requests in progress may run on after close() is called; default 5 s. */
  closeGraceMs?: number;
  /** Where the room server asks other servers for events (default: federation, or nowhere when it is disabled). */
  remoteEvents?: RemoteEvents;
  /** How other servers are found and trusted beyond the system's DNS and roots (tests: a local DNS server and CA). */
  federation?: FederationReach;
  /** Pauses between attempts to deliver to an application service (default 1 s doubling to 5 min; tests shorten them). */
  appServiceRetry?: { readonly minMs: number; readonly maxMs: number };
  /** Pauses between attempts to reach a push gateway (default 1 s doubling to 1 h; tests shorten them). */
  pushRetry?: { readonly minMs: number; readonly maxMs: number };
}

export interface FederationReach {
  readonly dns?: DnsResolver;
  /** PEM certificates trusted besides the system's roots. */
  readonly ca?: string | readonly string[];
  /** Pauses between the sender's attempts (default 2 s doubling to 5 min; tests shorten them). */
  readonly senderRetry?: { readonly minMs: number; readonly maxMs: number };
  /** Port of well-known fetches (443; tests serve them on loopback ports). */
  readonly wellKnownPort?: number;
}

/**
 * Federation's own services: the signed-request client, the key ring that fetches other servers'
 * keys (through it, directly or from the configured notaries) and the room server's port for
 * fetching events. None when `global.disable_federation` is set.
 */
function federationParts(core: ServerCore, reach: FederationReach = {}) {
  const { config, serverName, signingKey } = core;
  if (config.global.disable_federation) return undefined;
  const client = new FederationClient({
    authorize: (r) => requestAuthorization(r.scheme, { method: r.method, uri: r.uri, origin: serverName, destination: r.destination, ...(r.content !== undefined ? { content: r.content } : {}) }, signingKey),
    protocolName: config.global.protocol_name,
    disableTlsValidation: config.federation_api.disable_tls_validation,
    ...(reach.dns !== undefined ? { dns: reach.dns } : {}),
    ...(reach.ca !== undefined ? { ca: reach.ca } : {}),
    ...(reach.wellKnownPort !== undefined ? { wellKnownPort: reach.wellKnownPort } : {}),
  });
  const keyRing = new FederationKeyRing({
    db: core.db,
    serverName,
    signingKey,
    perspectives: config.federation_api.key_perspectives,
    preferDirectFetch: config.federation_api.prefer_direct_fetch,
    keyValidityPeriodMs: config.global.key_validity_period,
    fetchJson: async (server, request) => {
      const req: FederationRequest = { destination: server, method: request.method, path: request.path, ...(request.body !== undefined ? { body: request.body as JsonValue } : {}) };
      const res = await client.request(req);
      if (res.status !== 200) throw new Error(`${server} answered ${res.status} to ${request.path}`);
      return res.body;
    },
    log: { warn: (message, details) => core.log.warn(message, details ?? {}) },
  });
  const remoteEvents = new FederationRemoteEvents({ client, warn: (message, fields) => core.log.warn(message, fields) });
  return { client, keyRing, remoteEvents };
}

export interface HearthServer {
  readonly app: FastifyInstance;
  readonly core: ServerCore;
  readonly services: Services;
  /** Every route the app mounts, as defined (for tests that probe each one). */
  readonly routes: readonly RouteDef[];
  /** Whether the signing key file was created by this start. */
  readonly createdSigningKey: boolean;
  /** The listeners bound by listen(); empty before. */
  readonly listeners: readonly BoundListener[];
  /** Binds the listeners of `config.listen` (or `specs`); every one serves every route. */
  listen(specs?: readonly ListenerSpec[]): Promise<readonly BoundListener[]>;
  /** Stops the listeners, lets requests drain, closes the parts, the app and the database. Idempotent. */
  close(): Promise<void>;
}

/** The listener specs of a configuration, TLS files read. */
export function listenerSpecs(config: HearthConfig): ListenerSpec[] {
  const specs: ListenerSpec[] = [];
  const { http, https, tls_cert, tls_key } = config.listen;
  if (http !== null) specs.push({ host: http.host, port: http.port });
  if (https !== null) {
    if (tls_cert === null || tls_key === null) throw new Error('listen.https needs listen.tls_cert and listen.tls_key');
    specs.push({ host: https.host, port: https.port, tls: { cert: readPem(tls_cert, 'listen.tls_cert'), key: readPem(tls_key, 'listen.tls_key') } });
  }
  return specs;
}

function readPem(path: string, key: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${key}: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Opens the database and applies every pending migration. */
export async function openMigratedDatabase(config: HearthConfig, onQuery?: (milliseconds: number, failed: boolean) => void): Promise<Database<Schema>> {
  const connectionString = config.global.database.connection_string;
  // A database that cannot be reached, logged in to or written is the operator's to fix: say
  // which one and how, rather than what the driver says.
  const explained = (err: unknown) => {
    const message = explainDatabaseFailure(connectionString, err);
    return message === undefined ? err : new Error(message, { cause: err });
  };
  let database: Database<Schema> | undefined;
  try {
    database = openDatabase<Schema>({
      connectionString,
      maxOpenConns: config.global.database.max_open_conns,
      maxIdleConns: config.global.database.max_idle_conns,
      connMaxLifetimeSeconds: config.global.database.conn_max_lifetime,
      ...(onQuery !== undefined ? { onQuery } : {}),
    });
    await probeDatabase(database.db as Kysely<unknown>);
    await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
  } catch (err) {
    await database?.close().catch(() => undefined);
    throw explained(err);
  }
  return database;
}

export async function createServer(config: HearthConfig, options: CreateServerOptions = {}): Promise<HearthServer> {
  mkdirSync(config.global.data_dir, { recursive: true });
  // Bad registration files stop the server before anything else is done.
  const appServices = loadAppServices(config.app_service_config_files, config.global.server_name);
  const { key: signingKey, created: createdSigningKey } = loadOrCreateSigningKey(config.global.private_key);
  const logging = options.logger === undefined ? setUpLogging(config.logging) : undefined;
  // prom-client adds about 12 MB to the resident memory: loaded only when metrics are on.
  const metrics = config.global.metrics.enabled ? new (await import('./server/metrics.js')).ServerMetrics() : undefined;
  let database: Database<Schema>;
  try {
    database = await openMigratedDatabase(config, metrics && ((ms, failed) => metrics.observeQuery(ms, failed)));
  } catch (err) {
    await logging?.close();
    throw err;
  }
  const parts: ServerPart[] = [];
  try {
    const notifier = new InProcessBus(await currentStreamPositions(database.db));
    const log = new AppLog();
    const core: ServerCore = {
      config,
      serverName: config.global.server_name,
      database,
      db: database.db,
      signingKey,
      notifier,
      log,
      appServices,
    };
    const built = await buildParts(core, options, metrics);
    parts.push(...built.parts);
    const authenticators = parts.flatMap((p) => (p.authenticate ? [p.authenticate] : []));
    if (authenticators.length > 1) throw new Error('more than one part authenticates access tokens');
    const serverAuthenticators = parts.flatMap((p) => (p.authenticateServer ? [p.authenticateServer] : []));
    if (serverAuthenticators.length > 1) throw new Error('more than one part authenticates servers');
    const limits = config.client_api.rate_limiting;
    const app = buildHttpApp(
      parts.flatMap((p) => p.routes),
      {
        logger: options.logger ?? logging?.logger ?? false,
        ...(authenticators[0] ? { authenticate: authenticators[0] } : {}),
        ...(serverAuthenticators[0] ? { authenticateServer: serverAuthenticators[0] } : {}),
        trustedProxies: config.global.trusted_proxies,
        ...(metrics !== undefined ? { observe: (route, method, status, seconds) => metrics.observeRequest(route, method, status, seconds) } : {}),
        ...(limits.enabled
          ? {
              rateLimiter: new RateLimiter({
                limits,
                exemptUserIds: limits.exempt_user_ids,
                serverName: core.serverName,
                appserviceRateLimited: (id) => appServices.byId(id)?.rate_limited ?? true,
                userOverride: (userId) => {
                  const o = built.rateLimitOverrides.get(userId);
                  return o === undefined ? undefined : { per_second: o.messagesPerSecond, burst_count: o.burstCount };
                },
              }),
            }
          : {}),
      },
    );
    log.attach(app.log);
    await app.ready();
    return new RunningServer(app, core, built.services, createdSigningKey, parts, options.closeGraceMs ?? 5000, logging?.close);
  } catch (err) {
    await closeParts(parts);
    await database.close().catch(() => undefined);
    await logging?.close();
    throw err;
  }
}

/** Closes every part, later ones first (they may use earlier ones' services); returns the failures. */
async function closeParts(parts: readonly ServerPart[]): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const part of [...parts].reverse()) {
    try {
      await part.close?.();
    } catch (err) {
      failures.push(err);
    }
  }
  return failures;
}

class RunningServer implements HearthServer {
  private sockets: Listeners | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    readonly app: FastifyInstance,
    readonly core: ServerCore,
    readonly services: Services,
    readonly createdSigningKey: boolean,
    private readonly parts: readonly ServerPart[],
    private readonly closeGraceMs: number,
    private readonly closeLogs: (() => Promise<void>) | undefined,
  ) {}

  get routes(): readonly RouteDef[] {
    return this.parts.flatMap((p) => p.routes);
  }

  get listeners(): readonly BoundListener[] {
    return this.sockets?.bound ?? [];
  }

  async listen(specs?: readonly ListenerSpec[]): Promise<readonly BoundListener[]> {
    if (this.sockets !== undefined || this.closing !== undefined) throw new Error('the server is already listening or closed');
    const wanted = specs ?? listenerSpecs(this.core.config);
    if (wanted.length === 0) throw new Error('no listener configured: set listen.http or listen.https');
    this.sockets = await Listeners.start(this.app.routing, wanted, { log: this.app.log });
    return this.sockets.bound;
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const failures: unknown[] = [];
    const step = async (fn: () => Promise<void> | void) => {
      try {
        await fn();
      } catch (err) {
        failures.push(err);
      }
    };
    const stopping = () => {
      for (const part of this.parts) part.stopping?.();
    };
    await step(() => (this.sockets ? this.sockets.close(this.closeGraceMs, stopping) : stopping()));
    failures.push(...(await closeParts(this.parts)));
    await step(() => this.app.close());
    await step(() => this.core.database.close());
    await step(() => this.closeLogs?.());
    if (failures.length > 0) throw new AggregateError(failures, 'the server did not close cleanly');
  }
}
