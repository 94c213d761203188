// A small client for the sync tests: calls a running test server over HTTP as a user.

import assert from 'node:assert/strict';
import { HttpClient, enc, type HttpReply } from '../support/http-client.js';
import type { TestServer, TestUser } from '../support/server.js';

/** What the tests read of a reply (a full HttpReply also carries headers and text). */
export type Reply = Pick<HttpReply, 'status' | 'body'>;
export { enc };

export class Client {
  readonly http: HttpClient;

  constructor(
    readonly hs: TestServer,
    readonly user: TestUser,
  ) {
    this.http = new HttpClient(hs.baseUrl, { token: user.accessToken });
  }

  get userId(): string {
    return this.user.userId;
  }

  call(method: string, path: string, body?: unknown, init: { signal?: AbortSignal } = {}): Promise<HttpReply> {
    return this.http.request(method, path, body, init);
  }

  /** A call that must succeed; returns its body. */
  async ok(method: string, path: string, body?: unknown): Promise<any> {
    const r = await this.call(method, path, body);
    assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** GET /sync with the given query parameters; asserts 200. */
  async sync(params: Record<string, string | number | boolean | object> = {}, init: { signal?: AbortSignal } = {}): Promise<any> {
    const r = await this.syncRaw(params, init);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  }

  syncRaw(params: Record<string, string | number | boolean | object> = {}, init: { signal?: AbortSignal } = {}): Promise<HttpReply> {
    return this.http.get('/sync', { query: params, ...init });
  }

  async createRoom(body: object = {}): Promise<string> {
    return (await this.ok('POST', '/createRoom', body)).room_id as string;
  }

  async send(roomId: string, content: object, type = 'm.room.message'): Promise<string> {
    const txn = `t${Math.random().toString(36).slice(2)}`;
    return (await this.ok('PUT', `/rooms/${enc(roomId)}/send/${enc(type)}/${txn}`, content)).event_id as string;
  }

  async text(roomId: string, body: string): Promise<string> {
    return this.send(roomId, { msgtype: 'm.text', body });
  }

  async join(roomId: string): Promise<void> {
    await this.ok('POST', `/join/${enc(roomId)}`, {});
  }

  async invite(roomId: string, userId: string): Promise<void> {
    await this.ok('POST', `/rooms/${enc(roomId)}/invite`, { user_id: userId });
  }

  async leave(roomId: string): Promise<void> {
    await this.ok('POST', `/rooms/${enc(roomId)}/leave`, {});
  }
}

/**
 * Registers a new account on `hs` for each call, numbered so that the tests of a suite sharing one
 * server never collide (`user('alice')` makes alice1, then alice2, ...), password "secret".
 */
export function clients(hs: TestServer): (name: string) => Promise<Client> {
  let n = 0;
  return async (name) => new Client(hs, await hs.registerUser(`${name}${++n}`, 'secret'));
}

/** The timeline events of a joined room in a sync response (empty when the room is absent). */
export function timelineOf(sync: any, roomId: string, section = 'join'): any[] {
  return sync.rooms?.[section]?.[roomId]?.timeline?.events ?? [];
}

export function typesOf(events: readonly any[]): string[] {
  return events.map((e) => e.type as string);
}
