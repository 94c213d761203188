// The one HTTP client of the test suites: a base URL, an optional access token and an API prefix;
// requests go over a real socket with fetch, JSON bodies are encoded and replies decoded. Suites
// build their domain calls (sync, send, register ...) on it.
//
//   const http = new HttpClient(hs.baseUrl, { token: alice.accessToken });
//   const { status, body } = await http.get('/account/whoami');   // → /_matrix/client/v3/account/whoami
//   await http.put(`/rooms/${enc(roomId)}/state/m.room.topic`, { topic: 'x' });
//   await http.post('/login', undefined, { raw: '{not json', token: null });

/** Replies are read as untyped JSON: the tests assert on their shape. */
export interface HttpReply {
  readonly status: number;
  readonly headers: Headers;
  /** The decoded JSON; the text itself when it is not JSON; undefined when empty. */
  readonly body: any;
  /** The body as received. */
  readonly text: string;
}

export type QueryValue = string | number | boolean | object;

export interface RequestOptions {
  /** Overrides the client's token; null sends none. */
  readonly token?: string | null;
  /** Sent as it is, instead of the JSON encoding of the body argument (malformed JSON, other types, a stream without a length). */
  readonly raw?: string | Uint8Array | ReadableStream<Uint8Array>;
  /** Extra request headers; `content-type` defaults to application/json when a body is sent. */
  readonly headers?: Record<string, string>;
  /** Query parameters; objects are JSON-encoded (filters). */
  readonly query?: Record<string, QueryValue>;
  /** Overrides the client's prefix for this request. */
  readonly prefix?: string;
  readonly signal?: AbortSignal;
}

export interface HttpClientOptions {
  readonly token?: string;
  /** Put before paths that do not name their API themselves; default `/_matrix/client/v3`. */
  readonly prefix?: string;
}

/** Percent-encodes an id (`!`, `#`, `:`, `$`, `/` ...) for a path segment. */
export const enc = encodeURIComponent;

export class HttpClient {
  readonly token: string | undefined;
  readonly prefix: string;

  constructor(
    readonly baseUrl: string,
    options: HttpClientOptions = {},
  ) {
    this.token = options.token;
    this.prefix = options.prefix ?? '/_matrix/client/v3';
  }

  /** The same server and prefix as another user (or none). */
  as(token: string | undefined): HttpClient {
    return new HttpClient(this.baseUrl, { prefix: this.prefix, ...(token !== undefined ? { token } : {}) });
  }

  /** Paths under `/_`, `/.well-known` and `/health` are taken as they are; others go under the prefix. */
  path(path: string, prefix = this.prefix): string {
    return path.startsWith('/_') || path.startsWith('/.well-known') || path === '/health' ? path : prefix + path;
  }

  async request(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<HttpReply> {
    const headers: Record<string, string> = {};
    const token = options.token === undefined ? this.token : options.token;
    if (token !== undefined && token !== null) headers['authorization'] = `Bearer ${token}`;
    const payload = options.raw ?? (body !== undefined ? JSON.stringify(body) : undefined);
    const ownType = Object.keys(options.headers ?? {}).some((k) => k.toLowerCase() === 'content-type');
    if (payload !== undefined && !ownType) headers['content-type'] = 'application/json';
    Object.assign(headers, options.headers);
    let url = this.baseUrl + this.path(path, options.prefix);
    if (options.query !== undefined) {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(options.query)) query.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
      const qs = query.toString();
      if (qs !== '') url += (url.includes('?') ? '&' : '?') + qs;
    }
    const res = await fetch(url, {
      method,
      headers,
      ...(payload !== undefined ? { body: payload } : {}),
      // A stream is sent chunked; fetch wants that said.
      ...(payload instanceof ReadableStream ? { duplex: 'half' } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    } as RequestInit);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get(path: string, options?: RequestOptions): Promise<HttpReply> {
    return this.request('GET', path, undefined, options);
  }

  post(path: string, body?: unknown, options?: RequestOptions): Promise<HttpReply> {
    return this.request('POST', path, body, options);
  }

  put(path: string, body?: unknown, options?: RequestOptions): Promise<HttpReply> {
    return this.request('PUT', path, body, options);
  }

  del(path: string, body?: unknown, options?: RequestOptions): Promise<HttpReply> {
    return this.request('DELETE', path, body, options);
  }
}
