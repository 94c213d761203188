// matrix-js-sdk clients for the end-to-end tests: quiet, logged in with a password, and keeping a
// record of every request they made and how the server answered, so that a failing wait can say
// what the SDK asked and what it got.

import type { EventEmitter } from 'node:events';
import * as sdk from 'matrix-js-sdk';
import { type Logger, logger as sdkGlobalLogger } from 'matrix-js-sdk/lib/logger.js';

// The SDK's modules log through a shared loglevel logger whose children copy its method factory
// (and set their own level): a factory that prints nothing keeps them all quiet.
const rootLogger = sdkGlobalLogger as unknown as { methodFactory: unknown; rebuild(): void; setLevel(level: string): void };
rootLogger.methodFactory = () => () => undefined;
rootLogger.rebuild();
rootLogger.setLevel('silent');

// matrix-js-sdk 37 is made for Node 22 and uses Promise.withResolvers (Node 22+) when it sends.
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

// Each SDK request arms a timer for its local timeout (80 s past a sync's long-poll) that is never
// cleared, and capability refreshes arm one for hours; stopping the client leaves them, and they
// would hold the test process open long after the tests end. Such long timers made by the SDK are
// unreferenced: they still fire while the process lives, but do not keep it alive.
const LONG_TIMER_MS = 60_000;
const originalSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = Object.assign(
  function setTimeoutUnrefLongSdkTimers(this: unknown, ...args: Parameters<typeof originalSetTimeout>) {
    const timer = originalSetTimeout.apply(this, args);
    const ms = args[1];
    if (typeof ms === 'number' && ms >= LONG_TIMER_MS && /[\\/]matrix-js-sdk[\\/]/.test(new Error().stack ?? '')) timer.unref();
    return timer;
  },
  originalSetTimeout,
) as typeof originalSetTimeout;

/** A logger that keeps what the SDK would have printed (warnings and errors) instead. */
class QuietLogger implements Logger {
  constructor(readonly lines: string[]) {}
  trace(): void {}
  debug(): void {}
  info(): void {}
  warn(...msg: unknown[]): void {
    this.lines.push(`warn: ${msg.map(String).join(' ')}`);
  }
  error(...msg: unknown[]): void {
    this.lines.push(`error: ${msg.map(String).join(' ')}`);
  }
  getChild(): Logger {
    return this;
  }
}

export interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The reply's body when it was not a success. */
  readonly error?: string;
}

export interface SdkClient {
  readonly client: sdk.MatrixClient;
  readonly userId: string;
  /** Every request so far, oldest first. */
  readonly exchanges: Exchange[];
  readonly logLines: string[];
  /** The last requests and log lines, for failure messages. */
  trail(): string;
}

function recordingFetch(baseUrl: string, exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? 'GET';
    const path = url.replace(baseUrl, '').replace(/([?&])_cacheBuster=\d+&?/, '$1');
    let res: Response;
    try {
      res = await fetch(input, init);
    } catch (err) {
      exchanges.push({ method, path, status: 0, error: String(err) });
      throw err;
    }
    if (res.ok) {
      exchanges.push({ method, path, status: res.status });
    } else {
      const text = await res.clone().text();
      exchanges.push({ method, path, status: res.status, error: text.slice(0, 500) });
    }
    return res;
  };
}

/**
 * Logs in over /_matrix/ with m.login.password (`body` gives the identifier) and makes a client for
 * the session; `options` are passed on to the client (e.g. crypto callbacks).
 */
export async function loginClient(
  baseUrl: string,
  body: Omit<sdk.LoginRequest, 'type'>,
  options: Partial<sdk.ICreateClientOpts> = {},
): Promise<SdkClient> {
  const exchanges: Exchange[] = [];
  const logLines: string[] = [];
  const logger = new QuietLogger(logLines);
  const fetchFn = recordingFetch(baseUrl, exchanges);
  const anonymous = sdk.createClient({ baseUrl, fetchFn, logger });
  const login = await anonymous.loginRequest({ type: 'm.login.password', ...body } as sdk.LoginRequest);
  const client = sdk.createClient({
    ...options,
    baseUrl,
    fetchFn,
    logger,
    userId: login.user_id,
    accessToken: login.access_token,
    deviceId: login.device_id,
  });
  return {
    client,
    userId: login.user_id,
    exchanges,
    logLines,
    trail: () =>
      [
        ...exchanges.slice(-12).map((e) => `${e.method} ${e.path} -> ${e.status}${e.error ? ` ${e.error}` : ''}`),
        ...logLines.slice(-5),
      ].join('\n'),
  };
}

/**
 * Resolves with the first emission of `event` on `emitter` whose arguments `match` accepts, and
 * fails after `ms` with the client's trail. Listen before acting, so nothing is missed.
 */
export function waitForEmit<A extends unknown[]>(
  owner: SdkClient,
  emitter: EventEmitter,
  event: string,
  match: (...args: A) => boolean,
  what: string,
  ms = 10_000,
): Promise<A> {
  const waiting = new Promise<A>((resolve, reject) => {
    const onEvent = (...raw: unknown[]) => {
      const args = raw as A;
      let ok = false;
      try {
        ok = match(...args);
      } catch (err) {
        finish();
        reject(err);
        return;
      }
      if (ok) {
        finish();
        resolve(args);
      }
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`${owner.userId}: no ${what} within ${ms} ms; last requests:\n${owner.trail()}`));
    }, ms);
    const finish = () => {
      clearTimeout(timer);
      emitter.off(event, onEvent);
    };
    emitter.on(event, onEvent);
  });
  // A test that fails before awaiting this must not leave an unhandled rejection behind.
  waiting.catch(() => undefined);
  return waiting;
}

/** Polls `check` every 10 ms until it is true; fails after `ms` with the client's trail. */
export async function waitUntil(owner: SdkClient, check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${owner.userId}: ${what} not within ${ms} ms; last requests:\n${owner.trail()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Starts the client and waits for its first sync to be processed (the PREPARED state). */
export async function startAndPrepare(owner: SdkClient, initialSyncLimit = 10): Promise<void> {
  const prepared = waitForEmit<[sdk.SyncState, sdk.SyncState | null]>(
    owner,
    owner.client,
    sdk.ClientEvent.Sync,
    (state) => {
      if (state === sdk.SyncState.Error) throw new Error(`${owner.userId}: sync failed; last requests:\n${owner.trail()}`);
      return state === sdk.SyncState.Prepared;
    },
    'PREPARED sync state',
  );
  await owner.client.startClient({ initialSyncLimit });
  await prepared;
}
