// Routes as data. A route names its API and versions once; prefixes.ts derives every URL it answers
// (`/_chat/...` and `/_matrix/...`, each version alias). Handlers see HttpRequest, never Fastify.

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

export interface HttpRequest {
  readonly method: HttpMethod;
  /** Path parameters, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** Query parameters; a repeated parameter gives an array. */
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed JSON object body for `body: 'json'` routes, the raw bytes for `body: 'raw'`. */
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** From `Authorization: Bearer` or the `access_token` query parameter. */
  readonly accessToken: string | undefined;
  readonly remoteAddress: string;
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
  /** How the body is read: a JSON object (default for PUT/POST), raw bytes, or not at all. */
  readonly body?: 'json' | 'raw' | 'none';
  /** Largest accepted body in bytes (default: the app's JSON limit). */
  readonly bodyLimit?: number;
  readonly handler: (req: HttpRequest) => Promise<HttpResponse> | HttpResponse;
}
