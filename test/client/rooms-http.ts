// A server with the account and room routes over a real socket, real accounts (AccountService,
// bcrypt cost 4), called through the shared HttpClient.

import type { AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import { buildHttpApp } from '../../src/http/app.js';
import { accountRoutes } from '../../src/client/account/index.js';
import { roomRoutes } from '../../src/client/rooms/index.js';
import { generateSigningKey } from '../../src/protocol/signing.js';
import { RoomService } from '../../src/rooms/service.js';
import { RoomUpgrades } from '../../src/rooms/upgrade.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { AccountService } from '../../src/users/accounts.js';
import type { TestDatabase } from '../support/databases.js';
import { HttpClient, type HttpReply } from '../support/http-client.js';

export const SERVER = 'hs.test';

export type Reply = HttpReply;

export interface CallOptions {
  readonly token?: string;
  /** An object is sent as JSON; a string is sent as it is. */
  readonly body?: unknown;
  readonly prefix?: string;
}

export interface RoomsServer {
  readonly rooms: RoomService;
  readonly accounts: AccountService;
  readonly db: Kysely<Schema>;
  call(method: string, path: string, options?: CallOptions): Promise<Reply>;
  /** Registers and logs in a user; returns their access token and id. */
  login(localpart: string, options?: { admin?: boolean }): Promise<{ token: string; userId: string }>;
  close(): Promise<void>;
}

export async function startRoomsServer(target: TestDatabase): Promise<RoomsServer> {
  const database: Database<Schema> = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
  await migrateToLatest(database.db as never, database.dialect);
  const accounts = new AccountService({
    db: database.db,
    serverName: SERVER,
    bcryptCost: 4,
    registrationDisabled: true,
    guestsDisabled: true,
    registrationSharedSecret: null,
  });
  const rooms = new RoomService({ db: database.db, dialect: database.dialect, serverName: SERVER, signingKey: generateSigningKey(), notifier: new InProcessBus() });
  const accountData = new AccountDataService({ db: database.db, notifier: new InProcessBus() });
  const upgrades = new RoomUpgrades({
    rooms,
    db: database.db,
    carryOver: (userId, oldRoomId, newRoomId) => accountData.carryOverToUpgradedRoom(userId, oldRoomId, newRoomId),
    log: { warn: () => undefined },
  });
  const app = buildHttpApp([...accountRoutes({ accounts }), ...roomRoutes({ rooms, upgrades })], { authenticate: accounts.authenticate });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const http = new HttpClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
  const call: RoomsServer['call'] = (method, path, options = {}) =>
    http.request(method, path, typeof options.body === 'string' ? undefined : options.body, {
      token: options.token,
      raw: typeof options.body === 'string' ? options.body : undefined,
      prefix: options.prefix,
    });
  return {
    rooms,
    accounts,
    db: database.db,
    call,
    async login(localpart, options = {}) {
      const userId = await accounts.registerUser({ localpart, password: 'correct horse battery', admin: options.admin ?? false });
      const result = await accounts.login({ type: 'm.login.password', identifier: { type: 'm.id.user', user: localpart }, password: 'correct horse battery' });
      return { token: result.accessToken, userId };
    },
    async close() {
      await app.close();
      await database.close();
    },
  };
}

/** Path segment for an id: ids carry `!`, `#`, `:` and `$`. */
export const seg = (id: string): string => encodeURIComponent(id);
