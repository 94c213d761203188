// A federated test server that can be stopped and started again, as an operator restarts one:
// stop() ends the running HearthServer (its in-memory state is gone) and keeps the database, the
// data folder (so the signing key) and the configuration file; start() builds a new HearthServer
// from that file and binds it to the same addresses and ports as the first start, so the net's
// DNS records and the base URL stay right. close() ends it for good (database and folder removed).
//
//   const hs2 = await restartableFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', backend });
//   await hs2.stop();   // hs2 is unreachable
//   await hs2.start();  // the same server again

import { loadConfig } from '../../src/config/index.js';
import { type HearthServer, createServer, listenerSpecs } from '../../src/context.js';
import { type FederatedServerOptions, type FederationNet, startFederatedServer } from './federation-net.js';
import type { TestServer, TestUser } from './server.js';

export interface RestartableServer extends TestServer {
  /** The HearthServer running now (the latest start's); throws while stopped. */
  readonly server: HearthServer;
  readonly running: boolean;
  /** Closes the running HearthServer only: database, data folder and configuration stay. */
  stop(): Promise<void>;
  /** A new HearthServer from the same configuration file, on the first start's ports. */
  start(): Promise<void>;
}

export async function restartableFederatedServer(net: FederationNet, options: FederatedServerOptions): Promise<RestartableServer> {
  const first = await startFederatedServer(net, options);
  // The ports the first start bound, by kind: a restart binds them again.
  const ports = new Map(first.server.listeners.map((l) => [l.tls, l.port]));
  let current: HearthServer | undefined = first.server;
  let changing: Promise<void> = Promise.resolve();
  const serially = (fn: () => Promise<void>) => (changing = changing.catch(() => undefined).then(fn));

  const stop = () =>
    serially(async () => {
      const running = current;
      current = undefined;
      await running?.close();
    });

  const start = () =>
    serially(async () => {
      if (current !== undefined) throw new Error(`${first.serverName} is already running`);
      const { config } = loadConfig(first.configPath, {});
      const server = await createServer(config, {
        closeGraceMs: 1000,
        logger: false,
        federation: { ...options.federation, dns: net.resolver, ca: net.ca.cert },
      });
      try {
        await server.listen(listenerSpecs(config).map((spec) => ({ ...spec, port: ports.get(spec.tls !== undefined) ?? spec.port })));
      } catch (err) {
        await server.close().catch(() => undefined);
        throw err;
      }
      current = server;
    });

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      try {
        await stop();
      } finally {
        await first.close();
      }
    })());

  return {
    baseUrl: first.baseUrl,
    serverName: first.serverName,
    backend: first.backend,
    config: first.config,
    configPath: first.configPath,
    dataDir: first.dataDir,
    get server(): HearthServer {
      if (current === undefined) throw new Error(`${first.serverName} is stopped`);
      return current;
    },
    get running() {
      return current !== undefined;
    },
    stop,
    start,
    registerUser: (localpart, password, opts = {}) => registerUser(current, first.serverName, localpart, password, opts.admin ?? false),
    auth: first.auth,
    close,
  };
}

/** As startTestServer's registerUser, on whichever HearthServer runs now. */
async function registerUser(server: HearthServer | undefined, name: string, localpart: string, password: string, admin: boolean): Promise<TestUser> {
  if (server === undefined) throw new Error(`${name} is stopped`);
  const { accounts } = server.services;
  const userId = await accounts.registerUser({ localpart, password, admin });
  const login = await accounts.login({
    type: 'm.login.password',
    identifier: { identifier: { type: 'm.id.user', user: userId } },
    password,
  });
  return { userId: login.userId, accessToken: login.accessToken, deviceId: login.deviceId };
}
