// A real Hearth server for end-to-end tests: a fresh data folder (and, for PostgreSQL, a fresh
// database), a configuration file written there and loaded by the real loader, the server built by
// createServer and listening on 127.0.0.1 on a free port. close() removes everything again.
//
//   const hs = await startTestServer({ backend: 'sqlite' });
//   const alice = await hs.registerUser('alice', 'secret');
//   await new HttpClient(hs.baseUrl, { token: alice.accessToken }).get('/account/whoami');  // http-client.ts
//   await hs.close();
//
// Test servers differ from the shipped defaults in a few ways, so that tests are fast and can do
// what they need: bcrypt cost 4, open registration, no rate limiting, no logs. Override any key
// with `config` (written in the file's form: durations as "1h", sizes as "1mb").

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { stringify } from 'yaml';
import { type HearthConfig, loadConfig } from '../../src/config/index.js';
import { type FederationReach, type HearthServer, createServer } from '../../src/context.js';
import { type TestDatabase, createPostgresDatabase, createSqliteDatabase, storageBackends } from './databases.js';
import { forwardTo } from './forward.js';
import type { RemoteEvents } from '../../src/rooms/input/remote-events.js';

export type Backend = 'sqlite' | 'postgres';

/** A nested mapping in the configuration file's form, merged over the test defaults. */
export interface ConfigOverrides {
  [key: string]: unknown;
}

export interface StartTestServerOptions {
  /** Default 'sqlite'. */
  backend?: Backend;
  config?: ConfigOverrides;
  /** Default 'localhost'. */
  serverName?: string;
  /** Show the server's logs (at this level) on standard output; default: none. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Other servers' events, as the room server asks for them (e.g. fake remotes, remote-ports.ts). */
  remoteEvents?: RemoteEvents;
  /** How the server finds and trusts other servers (a test DNS server, a test CA). */
  federation?: FederationReach;
  /** Pauses between attempts to deliver to an application service. */
  appServiceRetry?: { readonly minMs: number; readonly maxMs: number };
  /** Pauses between attempts to reach a push gateway. */
  pushRetry?: { readonly minMs: number; readonly maxMs: number };
}

export interface TestUser {
  readonly userId: string;
  readonly accessToken: string;
  readonly deviceId: string;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  readonly serverName: string;
  readonly backend: Backend;
  /** The configuration as loaded. */
  readonly config: HearthConfig;
  /** The configuration file (in the data folder). */
  readonly configPath: string;
  readonly dataDir: string;
  /** The running server, for tests that need to reach its parts directly. */
  readonly server: HearthServer;
  /** Creates an account directly (registration settings do not apply) and logs it in once. */
  registerUser(localpart: string, password: string, options?: { admin?: boolean }): Promise<TestUser>;
  /** `{authorization: 'Bearer …'}` for a user, to pass as fetch headers. */
  auth(user: Pick<TestUser, 'accessToken'>): Record<string, string>;
  /** Stops the server and removes its data folder and database. Safe to call twice. */
  close(): Promise<void>;
}

const TEST_DEFAULTS: ConfigOverrides = {
  version: 2,
  listen: { http: '127.0.0.1:0' },
  client_api: {
    registration_disabled: false,
    rate_limiting: { enabled: false },
  },
  user_api: { bcrypt_cost: 4 },
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `over` merged into `base`, mappings key by key; anything else in `over` replaces. */
export function mergeConfig(base: ConfigOverrides, over: ConfigOverrides): ConfigOverrides {
  const out: ConfigOverrides = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeConfig(current, value) : value;
  }
  return out;
}

/** The backends to run a server suite on: `for (const b of await serverBackends()) describe(b.backend, {skip: b.skip}, ...)`. */
export async function serverBackends(): Promise<{ backend: Backend; skip: string | false }[]> {
  return (await storageBackends()).map((b) => ({ backend: b.name, skip: b.skip }));
}

export async function startTestServer(options: StartTestServerOptions = {}): Promise<TestServer> {
  const backend = options.backend ?? 'sqlite';
  const serverName = options.serverName ?? 'localhost';
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-server-'));
  let database: TestDatabase | undefined;
  let server: HearthServer | undefined;
  const cleanUp = async () => {
    try {
      await server?.close();
    } finally {
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  };
  try {
    database = backend === 'postgres' ? await createPostgresDatabase() : await createSqliteDatabase();
    const file = mergeConfig(
      mergeConfig(TEST_DEFAULTS, {
        global: {
          server_name: serverName,
          data_dir: dataDir,
          database: { connection_string: database.connectionString, max_open_conns: 10 },
        },
        logging: [{ type: 'std', level: options.logLevel ?? 'error' }],
      }),
      options.config ?? {},
    );
    const configPath = join(dataDir, 'hearth.yaml');
    writeFileSync(configPath, stringify(file));
    const { config, warnings } = loadConfig(configPath, {});
    if (warnings.length > 0) {
      throw new Error(`test configuration has unknown keys: ${warnings.map((w) => `${w.path}: ${w.message}`).join('; ')}`);
    }
    server = await createServer(config, {
      closeGraceMs: 1000,
      ...(options.logLevel ? {} : { logger: false }),
      ...(options.remoteEvents !== undefined ? { remoteEvents: options.remoteEvents } : {}),
      ...(options.federation !== undefined ? { federation: options.federation } : {}),
      ...(options.appServiceRetry !== undefined ? { appServiceRetry: options.appServiceRetry } : {}),
      ...(options.pushRetry !== undefined ? { pushRetry: options.pushRetry } : {}),
    });
    const [listener] = await server.listen();
    const running = server;
    let closed: Promise<void> | undefined;
    return {
      baseUrl: listener!.url,
      serverName: config.global.server_name,
      backend,
      config,
      configPath,
      dataDir,
      server: running,
      registerUser: (localpart, password, opts = {}) => registerTestUser(running, localpart, password, opts.admin ?? false),
      auth: (user) => ({ authorization: `Bearer ${user.accessToken}` }),
      close: () => (closed ??= cleanUp()),
    };
  } catch (err) {
    await cleanUp().catch(() => undefined);
    throw err;
  }
}

/**
 * For a suite on one server: registers hooks that start it before the suite's tests and close it
 * after them, and returns an object standing for it. Hooks the suite registers later run after
 * these, so its own `before` can already use the server.
 */
export function useTestServer(options: StartTestServerOptions = {}): TestServer {
  let hs: TestServer | undefined;
  before(async () => {
    hs = await startTestServer(options);
  });
  after(async () => {
    await hs?.close();
  });
  return forwardTo(() => hs, 'the test server');
}

async function registerTestUser(
  server: HearthServer,
  localpart: string,
  password: string,
  admin: boolean,
): Promise<TestUser> {
  const { accounts } = server.services;
  const userId = await accounts.registerUser({ localpart, password, admin });
  const login = await accounts.login({
    type: 'm.login.password',
    identifier: { identifier: { type: 'm.id.user', user: userId } },
    password,
  });
  return { userId: login.userId, accessToken: login.accessToken, deviceId: login.deviceId };
}
