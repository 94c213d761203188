// A migrated database and AccountService instances over it, for the account tests.

import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { AccountService, type AccountServiceDeps } from '../../src/users/accounts.js';
import type { TestDatabase } from '../support/databases.js';

export const SERVER = 'hearth.test';

export interface AccountsFixture {
  readonly database: Database<Schema>;
  readonly clock: { now: number };
  service(overrides?: Partial<AccountServiceDeps>): AccountService;
  close(): Promise<void>;
}

export async function accountsFixture(create: () => Promise<TestDatabase>): Promise<AccountsFixture> {
  const target = await create();
  const database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 4 });
  await migrateToLatest(database.db as never, database.dialect);
  const clock = { now: 1_700_000_000_000 };
  return {
    database,
    clock,
    service: (overrides = {}) =>
      new AccountService({
        db: database.db,
        serverName: SERVER,
        bcryptCost: 4,
        registrationDisabled: false,
        guestsDisabled: false,
        registrationSharedSecret: null,
        now: () => clock.now,
        ...overrides,
      }),
    close: async () => {
      await database.close();
      await target.drop();
    },
  };
}
