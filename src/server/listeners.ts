// The sockets the server answers on. Every listener, plain or TLS, hands its requests to the same
// handler (the HTTP app's router), so client, federation and operator routes are on all of them.

import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { formatBindAddress } from '../config/index.js';
import { answerClientError, type ClientErrorLog } from '../http/client-error.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ListenerSpec {
  readonly host: string;
  /** 0 asks the system for a free port. */
  readonly port: number;
  /** PEM certificate chain and key; absent for plain HTTP. */
  readonly tls?: { readonly cert: Buffer | string; readonly key: Buffer | string };
}

export interface BoundListener {
  readonly tls: boolean;
  readonly host: string;
  /** The port actually bound (never 0). */
  readonly port: number;
  /** `http://host:port` or `https://host:port`. */
  readonly url: string;
}

export interface ListenerOptions {
  /**
   * Longest time a client may take to send a whole request, head and body; then it is answered
   * 408 (when no reply has begun) and the connection closed. Default 90 s.
   */
  readonly requestTimeoutMs?: number;
  /** Where requests refused before any route sees them are logged. */
  readonly log?: ClientErrorLog;
}

// Longer than the idle timeouts of common proxies and load balancers (60 s), as Fastify's default.
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
const IDLE_SWEEP_MS = 50;
// Node's default time for the request head. The whole request gets a little longer: a JSON body is
// at most a few MiB, and a client trickling one byte at a time must not hold a connection for
// Node's default five minutes.
const HEADERS_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 90_000;

/** Node's server options for a request bound; Node checks for late requests every `interval`. */
function timeoutOptions(requestTimeoutMs: number): ServerOptions {
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
    connectionsCheckingInterval: Math.max(10, Math.min(5_000, Math.floor(requestTimeoutMs / 4))),
    // A request without Host is answered by the app, in JSON with CORS headers, not Node's empty 400.
    requireHostHeader: false,
  };
}

function listen(server: Server, spec: ListenerSpec): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const reason = err.code === 'EADDRINUSE' ? 'address already in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      const scheme = spec.tls ? 'https' : 'http';
      reject(new Error(`cannot listen on ${scheme}://${formatBindAddress(spec)}: ${reason}`));
    };
    server.once('error', onError);
    server.listen({ host: spec.host, port: spec.port }, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Open sockets of one server; `close` stops accepting, then waits for requests to finish. */
export class Listeners {
  private constructor(
    readonly bound: readonly BoundListener[],
    private readonly servers: readonly Server[],
  ) {}

  /** Binds every spec, or none: on a failure the ones already bound are closed again. */
  static async start(handler: RequestHandler, specs: readonly ListenerSpec[], options: ListenerOptions = {}): Promise<Listeners> {
    const servers: Server[] = [];
    const bound: BoundListener[] = [];
    const serverOptions = timeoutOptions(options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
    try {
      for (const spec of specs) {
        const server = spec.tls
          ? createHttpsServer({ ...serverOptions, cert: spec.tls.cert, key: spec.tls.key }, handler)
          : createHttpServer(serverOptions, handler);
        server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
        // Requests the parser rejects (an overlong URL or headers, a late request) get a JSON
        // error, not a bare status.
        server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, options.log));
        servers.push(server);
        const address = await listen(server, spec);
        const tls = spec.tls !== undefined;
        const hostPort = formatBindAddress({ host: address.address, port: address.port });
        bound.push({ tls, host: address.address, port: address.port, url: `${tls ? 'https' : 'http'}://${hostPort}` });
      }
    } catch (err) {
      await new Listeners(bound, servers).close(0);
      throw err;
    }
    return new Listeners(bound, servers);
  }

  /**
   * Stops accepting connections and drops idle keep-alive ones at once; requests in progress get
   * `graceMs` to finish before their connections are cut. `onStopped` runs once nothing new is
   * accepted, to end long waits early.
   */
  async close(graceMs: number, onStopped?: () => void): Promise<void> {
    const closed = Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening) {
              server.closeAllConnections();
              resolve();
              return;
            }
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            // A connection whose request finishes during the drain turns idle; drop it then.
            const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
            server.close(() => {
              clearTimeout(timer);
              clearInterval(sweep);
              resolve();
            });
            server.closeIdleConnections();
          }),
      ),
    );
    onStopped?.();
    await closed;
  }
}
