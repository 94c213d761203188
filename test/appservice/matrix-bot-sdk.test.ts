// A bot written with the matrix-bot-sdk npm package (its Appservice class, which runs its own
// HTTP server receiving transactions, and its intents acting with the as_token), as written for
// any Matrix homeserver, against a real Hearth server: it joins the room it is invited to, answers
// "!ping" there as its own user, and registers a user of its namespace that speaks in a room. Both
// storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Appservice as AppserviceType, IAppserviceRegistration } from 'matrix-bot-sdk';
import { stringify } from 'yaml';
import { enc, request } from '../e2e/support/client.js';
import { MatrixBotSdk } from '../support/bot-sdk.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const { Appservice, LogLevel, LogService, MemoryStorageProvider } = MatrixBotSdk;
// The SDK logs every request and transaction at INFO; keep its warnings and errors. (One error line
// per suite is expected: the bot's own registration answers M_USER_IN_USE, as the server makes the
// sender's account as it starts, and the SDK takes that answer as registered.)
LogService.setLevel(LogLevel.WARN);

const HS_TOKEN = 'sdk-hs-token-0123456789';
const AS_TOKEN = 'sdk-as-token-0123456789';
const BOT = '@sdkbot:localhost';
const WAIT_MS = 15_000;

interface MatrixEvent {
  readonly event_id: string;
  readonly type: string;
  readonly room_id: string;
  readonly sender: string;
  readonly state_key?: string;
  readonly content: { readonly body?: string; readonly msgtype?: string; readonly membership?: string };
}

/** A TCP port free on loopback now (the registration names the bot's port before it listens). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`a matrix-bot-sdk bot (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-matrix-bot-sdk-'));
    const seen: MatrixEvent[] = [];
    /** What the bot's own handlers failed with, shown when a wait times out. */
    const failures: unknown[] = [];
    let hs: TestServer;
    let appservice: AppserviceType;
    const call = async (method: string, path: string, payload?: unknown, token?: string) => {
      const r = await request(hs.baseUrl, method, `/_matrix/client/v3${path}`, payload, token !== undefined ? { token } : {});
      assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
      return r.body as Record<string, unknown>;
    };

    before(async () => {
      const port = await freePort();
      const registration: IAppserviceRegistration = {
        id: 'sdkbot',
        url: `http://127.0.0.1:${port}`,
        as_token: AS_TOKEN,
        hs_token: HS_TOKEN,
        sender_localpart: 'sdkbot',
        namespaces: { users: [{ exclusive: true, regex: '@sdk_.*:localhost' }], rooms: [], aliases: [] },
      };
      const file = join(dir, 'sdkbot.yaml');
      writeFileSync(file, stringify(registration));
      hs = await startTestServer({ backend, config: { app_service_config_files: [file] }, appServiceRetry: { minMs: 20, maxMs: 200 } });

      appservice = new Appservice({
        port,
        bindAddress: '127.0.0.1',
        homeserverName: 'localhost',
        homeserverUrl: hs.baseUrl,
        registration,
        storage: new MemoryStorageProvider(),
      });
      const handle = (work: Promise<unknown>) => work.catch((err: unknown) => failures.push(err));
      appservice.on('room.event', (_roomId: string, event: MatrixEvent) => seen.push(event));
      // The bot joins the rooms it is invited to, and answers "!ping" with "pong" as its own user.
      appservice.on('room.invite', (roomId: string, event: MatrixEvent) => {
        if (event.state_key === appservice.botUserId) void handle(appservice.botIntent.joinRoom(roomId));
      });
      appservice.on('room.message', (roomId: string, event: MatrixEvent) => {
        if (event.sender === appservice.botUserId || event.content.body !== '!ping') return;
        void handle(appservice.botIntent.sendText(roomId, 'pong', 'm.notice'));
      });
      // Listens, then registers the bot's own user (as_token, m.login.application_service).
      await appservice.begin();
    });
    after(async () => {
      await hs?.close();
      appservice?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const until = async <T>(what: string, fn: () => Promise<T | undefined> | T | undefined): Promise<T> => {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const value = await fn();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the bot's failures: ${failures.map(String).join('; ') || 'none'}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    const messages = async (roomId: string, token: string) =>
      (await call('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=20`, undefined, token))['chunk'] as MatrixEvent[];

    test('the bot joins the room it is invited to and answers as its own user', async () => {
      assert.equal(appservice.botUserId, BOT);
      const alice = await hs.registerUser('alice', 'alice-password');
      const roomId = (await call('POST', '/createRoom', {}, alice.accessToken))['room_id'] as string;
      await call('POST', `/rooms/${enc(roomId)}/invite`, { user_id: BOT }, alice.accessToken);
      await until('the bot to join', async () => {
        const joined = (await call('GET', `/rooms/${enc(roomId)}/joined_members`, undefined, alice.accessToken))['joined'] as Record<string, unknown>;
        return BOT in joined ? true : undefined;
      });
      await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/ping-1`, { msgtype: 'm.text', body: '!ping' }, alice.accessToken);
      const pong = await until("the bot's pong", async () => (await messages(roomId, alice.accessToken)).find((e) => e.content.body === 'pong'));
      assert.equal(pong.sender, BOT);
      assert.equal(pong.content.msgtype, 'm.notice');
      const ping = seen.find((e) => e.content.body === '!ping');
      assert.equal(ping?.room_id, roomId);
      assert.equal(ping?.sender, alice.userId);
      assert.deepEqual(failures, []);
    });

    test('the bot registers a user of its namespace, which speaks in a room', async () => {
      const bob = await hs.registerUser('bob', 'bob-password');
      const roomId = (await call('POST', '/createRoom', { preset: 'public_chat' }, bob.accessToken))['room_id'] as string;
      const carol = appservice.getIntentForSuffix('carol');
      assert.equal(carol.userId, '@sdk_carol:localhost');
      await carol.ensureRegistered();
      const whoami = await carol.underlyingClient.getWhoAmI();
      assert.equal(whoami.user_id, '@sdk_carol:localhost');
      // Joins the (public) room first, then sends.
      const eventId = await carol.sendText(roomId, 'hello from carol');
      const said = await until("carol's message", async () => (await messages(roomId, bob.accessToken)).find((e) => e.event_id === eventId));
      assert.equal(said.sender, '@sdk_carol:localhost');
      assert.equal(said.content.body, 'hello from carol');
      // Her message is in the service's namespace, so it is pushed to the bot too.
      const pushed = await until('carol\'s message at the bot', () => seen.find((e) => e.event_id === eventId));
      assert.equal(pushed.sender, '@sdk_carol:localhost');
      assert.deepEqual(failures, []);
    });
  });
}
