// A server with the per-user data routes over a real socket, authenticated by the real accounts
// service, on a real database; rooms are stood in for by FakeRooms.

import type { AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import { userDataRoutes, type UserDataServices } from '../../src/client/user-data/index.js';
import { buildHttpApp } from '../../src/http/app.js';
import { openDatabase } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { AccountService } from '../../src/users/accounts.js';
import { FilterService } from '../../src/users/filters.js';
import { PresenceService } from '../../src/users/presence.js';
import { ProfileService, type Profile } from '../../src/users/profiles.js';
import { PushRuleService } from '../../src/users/push-rules.js';
import { ReceiptService } from '../../src/users/receipts.js';
import { ToDeviceService } from '../../src/users/to-device.js';
import { TypingService } from '../../src/users/typing.js';
import { UserDirectoryService } from '../../src/users/user-directory.js';
import type { TestDatabase } from '../support/databases.js';
import { HttpClient, enc, type HttpReply } from '../support/http-client.js';
import { FakeRooms } from '../users/user-data-support.js';

export const SERVER = 'hs.test';

export type Reply = HttpReply;

export interface CallOptions {
  readonly token?: string;
  readonly body?: unknown;
  /** Sent as is (for malformed JSON). */
  readonly raw?: string;
  readonly prefix?: string;
}

export interface TestUser {
  readonly userId: string;
  readonly token: string;
  readonly deviceId: string;
}

export interface UserDataServer {
  readonly db: Kysely<Schema>;
  readonly notifier: InProcessBus;
  readonly rooms: FakeRooms;
  readonly services: UserDataServices;
  readonly accounts: AccountService;
  /** Profile changes the room server would have been told of. */
  readonly profileChanges: [string, Profile][];
  call(method: string, path: string, options?: CallOptions): Promise<Reply>;
  /** Registers and logs in a user (a new device per call with the same localpart). */
  user(localpart: string): Promise<TestUser>;
  login(localpart: string): Promise<TestUser>;
  guest(): Promise<TestUser>;
  close(): Promise<void>;
}

export async function startUserDataServer(create: () => Promise<TestDatabase>): Promise<UserDataServer> {
  const target = await create();
  const database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
  await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
  const db = database.db;
  const notifier = new InProcessBus();
  const rooms = new FakeRooms();
  const profileChanges: [string, Profile][] = [];
  const profiles = new ProfileService({ db, serverName: SERVER, onProfileChange: (u, p) => void profileChanges.push([u, p]) });
  const accounts = new AccountService({
    db,
    serverName: SERVER,
    bcryptCost: 4,
    registrationDisabled: false,
    guestsDisabled: false,
    registrationSharedSecret: null,
    onRegister: (userId, localpart, displayname) => profiles.createProfile(userId, localpart, displayname),
  });
  const accountData = new AccountDataService({ db, notifier });
  const typing = new TypingService({ notifier, isJoined: rooms.isJoined });
  const presence = new PresenceService({ db, notifier, usersSharingRooms: rooms.usersSharingRooms });
  const services: UserDataServices = {
    profiles,
    accountData,
    filters: new FilterService({ db }),
    typing,
    receipts: new ReceiptService({ db, notifier, accountData, isJoined: rooms.isJoined, eventOrder: rooms.eventOrder }),
    toDevice: new ToDeviceService({ db, notifier, serverName: SERVER }),
    presence,
    userDirectory: new UserDirectoryService({ db, usersSharingRooms: rooms.usersSharingRooms, usersInPublicRooms: rooms.usersInPublicRooms }),
    pushRules: new PushRuleService({ accountData }),
  };
  const app = buildHttpApp(userDataRoutes(services), { authenticate: accounts.authenticate });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const http = new HttpClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, { prefix: '/_chat/client/v3' });

  const login = async (localpart: string): Promise<TestUser> => {
    const r = await accounts.login({ type: 'm.login.password', identifier: { identifier: { type: 'm.id.user', user: localpart } }, password: 'correct horse' });
    return { userId: r.userId, token: r.accessToken, deviceId: r.deviceId };
  };

  return {
    db,
    notifier,
    rooms,
    services,
    accounts,
    profileChanges,
    call: (method, path, options = {}) =>
      http.request(method, path, options.body, { token: options.token, raw: options.raw, prefix: options.prefix }),
    async user(localpart) {
      if (!(await accounts.userExists(`@${localpart}:${SERVER}`))) {
        await accounts.registerUser({ localpart, password: 'correct horse', admin: false });
      }
      return login(localpart);
    },
    login,
    async guest() {
      const r = await accounts.register({ kind: 'guest' });
      return { userId: r.userId, token: r.accessToken!, deviceId: r.deviceId! };
    },
    async close() {
      typing.close();
      presence.close();
      await app.close();
      await database.close();
      // pg's pool.end() resolves before its sockets finish closing; let them settle before the
      // database is dropped WITH (FORCE).
      if (database.dialect === 'postgres') await new Promise((r) => setTimeout(r, 100));
      await target.drop();
    },
  };
}

export { enc };
