// Routes as data. A route names its API and versions once; prefixes.ts derives every URL it answers
// (`/_chat/...` and `/_matrix/...`, each version alias). Handlers see HttpRequest, never Fastify.

import type { Requester } from '../users/requester.js';
import type { RateLimitName } from './rate-limit.js';

export type { Authenticator, Requester } from '../users/requester.js';

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** Which API a route belongs to; decides its URL prefixes. */
export type Api =
  | 'client' // /_chat/client/<version>
  | 'federation' // /_chat/federation/<version>
  | 'key' // /_chat/key/<version>
  | 'media' // /_chat/media/<version>
  | 'admin' // /_ext/admin/<version> and /_synapse/admin/<version>
  | 'wellKnown' // /.well-known/chat and /.well-known/matrix
  | 'root'; // the path as written (/health, /metrics)

/**
 * What a route demands of the caller:
 * - 'none': no token read;
 * - 'optional': a token is used when present (and must then be valid);
 * - 'user': a valid token of a registered user (guests refused with M_GUEST_ACCESS_FORBIDDEN);
 * - 'guest': a valid token, guests allowed;
 * - 'admin': a valid token of a server admin;
 * - 'server': a request signed by another server (`X-Chat` or `X-Matrix` authorization).
 */
export type RouteAuth = 'none' | 'optional' | 'user' | 'guest' | 'admin' | 'server';

/** What a server's request signature covers, as received. */
export interface ServerSignedRequest {
  readonly method: HttpMethod;
  /** The path and query string exactly as received. */
  readonly uri: string;
  /** Every `Authorization` header value. */
  readonly authorization: readonly string[];
  /** The JSON body; undefined for requests without one. */
  readonly content: unknown;
}

/** Checks a server's request signature; resolves to the origin's server name, or throws 401 M_UNAUTHORIZED. */
export type ServerAuthenticator = (req: ServerSignedRequest) => Promise<string>;

export interface HttpRequest {
  readonly method: HttpMethod;
  /** Path parameters, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** Query parameters; a repeated parameter gives an array. */
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed JSON object body for `body: 'json'` routes, the raw bytes for `body: 'raw'`, a Readable for `body: 'stream'`. */
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** From `Authorization: Bearer` or the `access_token` query parameter. */
  readonly accessToken: string | undefined;
  /** The client's address: the peer's, or from X-Forwarded-For when the peer is a trusted proxy. */
  readonly remoteAddress: string;
  /** Set for user routes whose `auth` is not 'none' (and for 'optional' only when a token was sent). */
  readonly requester?: Requester;
  /** For 'server' routes: the server that signed the request. */
  readonly origin?: string;
  /**
   * Calls `listener` once if the client goes away before the reply is sent (at once if it has
   * gone already) and returns a function that removes it; long-polls stop waiting with it. A
   * listener on the socket costs a long-poll far less than an AbortSignal held through its wait.
   */
  onClientGone?(listener: () => void): () => void;
}

export interface HttpResponse {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface RouteDef {
  readonly method: HttpMethod;
  readonly api: Api;
  /** Version segments the route answers under, e.g. ['r0', 'v3']; ignored for wellKnown and root. */
  readonly versions?: readonly string[];
  /** Path after the version segment, Fastify syntax for parameters: '/rooms/:roomId/state'. */
  readonly path: string;
  /** Default 'user' for client and media routes, 'admin' for admin routes, else 'none'. */
  readonly auth?: RouteAuth;
  /** The rate limit this route counts against (see http/rate-limit.ts); default: none. */
  readonly rateLimit?: RateLimitName;
  /**
   * How the body is read: a JSON object (default for PUT/POST), raw bytes, a stream the handler
   * reads itself (uploads: nothing is buffered, `bodyLimit` does not apply, and the connection is
   * closed after a reply sent before the body was read), or not at all.
   */
  readonly body?: 'json' | 'raw' | 'stream' | 'none';
  /**
   * Whether NUL (U+0000) is accepted in the JSON body's string values: only where they are stored
   * nowhere but in an event's JSON text, which keeps NUL on every backend. Default: refused with
   * 400 M_BAD_JSON, as in keys and in path and query parameters everywhere (http/nul.ts).
   */
  readonly allowNulInBodyStrings?: boolean;
  /** Largest accepted body in bytes (default: the app's JSON limit). */
  readonly bodyLimit?: number;
  readonly handler: (req: HttpRequest) => Promise<HttpResponse> | HttpResponse;
}
