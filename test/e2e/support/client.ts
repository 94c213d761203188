// A client-API caller for the end-to-end tests: speaks to a running server over HTTP under one
// prefix (`/_chat/client/v3`, `/_matrix/client/r0`, ...), registers through the dummy flow and logs
// in with a password, as any Matrix client does.

import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { HttpClient, enc, type HttpReply, type RequestOptions } from '../../support/http-client.js';

export type Reply = HttpReply;
export { enc };

export interface CallOptions {
  /** Sent as is instead of JSON-encoding `body`. */
  readonly rawBody?: string | Uint8Array | ReadableStream<Uint8Array>;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
  /** Override the client's token; null sends none. */
  readonly token?: string | null;
}

function requestOptions(options: CallOptions): RequestOptions {
  return { raw: options.rawBody, headers: options.headers, signal: options.signal, token: options.token };
}

/** Sends a request to `baseUrl + path` and reads the JSON reply (or none). */
export function request(baseUrl: string, method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Reply> {
  return new HttpClient(baseUrl, { prefix: '' }).request(method, path, body, requestOptions(options));
}

export class ApiClient {
  readonly http: HttpClient;

  constructor(
    readonly baseUrl: string,
    /** e.g. `/_matrix/client/v3` */
    readonly prefix: string,
    readonly userId: string,
    readonly accessToken: string,
    readonly deviceId: string,
  ) {
    this.http = new HttpClient(baseUrl, { prefix, token: accessToken });
  }

  /** A path starting with `/_` is taken as is; any other goes under the client's prefix. */
  url(path: string): string {
    return this.http.path(path);
  }

  call(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Reply> {
    return this.http.request(method, path, body, requestOptions(options));
  }

  /** A call that must answer 200; returns its body. */
  async ok(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<any> {
    const r = await this.call(method, path, body, options);
    assert.equal(r.status, 200, `${method} ${this.url(path)} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** GET /sync with these query parameters (objects JSON-encoded); must answer 200. */
  sync(params: Record<string, string | number | boolean | object> = {}, options: CallOptions = {}): Promise<any> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) query.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    const qs = query.toString();
    return this.ok('GET', `/sync${qs === '' ? '' : `?${qs}`}`, undefined, options);
  }

  async send(roomId: string, content: object, txnId: string, type = 'm.room.message'): Promise<string> {
    return (await this.ok('PUT', `/rooms/${enc(roomId)}/send/${enc(type)}/${enc(txnId)}`, content)).event_id as string;
  }
}

/**
 * Registers `username` through the user-interactive dummy flow (the first request learns the
 * session and flows), then logs in with m.login.password and an m.id.user identifier.
 */
export async function registerAndLogin(baseUrl: string, prefix: string, username: string, password: string): Promise<ApiClient> {
  const first = await request(baseUrl, 'POST', `${prefix}/register`, { username, password });
  assert.equal(first.status, 401, `register without auth: ${JSON.stringify(first.body)}`);
  assert.equal(typeof first.body.session, 'string');
  assert.ok(
    first.body.flows.some((f: { stages: string[] }) => f.stages.length === 1 && f.stages[0] === 'm.login.dummy'),
    `the dummy flow is offered: ${JSON.stringify(first.body.flows)}`,
  );
  const registered = await request(baseUrl, 'POST', `${prefix}/register`, {
    username,
    password,
    inhibit_login: true,
    auth: { type: 'm.login.dummy', session: first.body.session },
  });
  assert.equal(registered.status, 200, `register: ${JSON.stringify(registered.body)}`);
  assert.equal(registered.body.access_token, undefined, 'inhibit_login gives no token');
  const userId = registered.body.user_id as string;

  const login = await request(baseUrl, 'POST', `${prefix}/login`, {
    type: 'm.login.password',
    identifier: { type: 'm.id.user', user: username },
    password,
    initial_device_display_name: `${username}'s test client`,
  });
  assert.equal(login.status, 200, `login: ${JSON.stringify(login.body)}`);
  assert.equal(login.body.user_id, userId);
  return new ApiClient(baseUrl, prefix, userId, login.body.access_token, login.body.device_id);
}

/** The timeline events of a room in a sync response's section (empty when the room is absent). */
export function timelineOf(sync: any, roomId: string, section: 'join' | 'leave' = 'join'): any[] {
  return sync.rooms?.[section]?.[roomId]?.timeline?.events ?? [];
}

/** The events of a room's ephemeral section in a sync response. */
export function ephemeralOf(sync: any, roomId: string): any[] {
  return sync.rooms?.join?.[roomId]?.ephemeral?.events ?? [];
}

export interface Wake {
  readonly sync: any;
  /** Milliseconds from the start of `act` to the poll's answer. */
  readonly sinceStart: number;
  /** Milliseconds from `act`'s end (its request answered) to the poll's answer; 0 if the poll answered first. */
  readonly sinceDone: number;
}

/**
 * Starts a long-poll sync from `since` (bounded: 5 s), lets it reach the server and wait for
 * `settleMs`, checks it is still waiting, then runs `act` and times when the poll answers.
 */
export async function timeWake(client: ApiClient, since: string, act: () => Promise<unknown>, settleMs = 60): Promise<Wake> {
  let woke = 0;
  const poll = client.sync({ since, timeout: 5000 }).then((s) => {
    woke = performance.now();
    return s;
  });
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  assert.equal(woke, 0, 'the poll waits while nothing happens');
  const start = performance.now();
  await act();
  const done = performance.now();
  const sync = await poll;
  return { sync, sinceStart: woke - start, sinceDone: Math.max(0, woke - done) };
}
