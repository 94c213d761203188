// A bot written with the matrix-appservice npm package (its AppService class receiving
// transactions), as written for any Matrix homeserver, against a real Hearth server: it is sent
// the events of its room, answers a message as its own user with the as_token, acts as a user
// of its namespace it registers, and hears typing and receipts through the library's `ephemeral`
// event. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AppService } from 'matrix-appservice';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const HS_TOKEN = 'bot-hs-token-0123456789';
const AS_TOKEN = 'bot-as-token-0123456789';
const WAIT_MS = 15_000;

interface MatrixEvent {
  readonly event_id: string;
  readonly type: string;
  readonly room_id: string;
  readonly sender: string;
  readonly content: { readonly body?: string; readonly membership?: string };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`a matrix-appservice bot (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-matrix-appservice-'));
    const bot = new AppService({ homeserverToken: HS_TOKEN });
    const seen: MatrixEvent[] = [];
    const ephemeral: { type: string; room_id?: string; content: Record<string, unknown> }[] = [];
    let hs: TestServer;
    const call = async (method: string, path: string, payload?: unknown, token?: string) => {
      const r = await request(hs.baseUrl, method, `/_matrix/client/v3${path}`, payload, token !== undefined ? { token } : {});
      assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
      return r.body as Record<string, unknown>;
    };

    before(async () => {
      await bot.listen(0, '127.0.0.1', 16);
      const port = ((bot as unknown as { server: { address(): AddressInfo } }).server.address()).port;
      // The bot answers "!ping" in its rooms with "pong", as its own user.
      bot.on('type:m.room.message', (raw: Record<string, unknown>) => {
        const event = raw as unknown as MatrixEvent;
        seen.push(event);
        if (event.content.body !== '!ping') return;
        void request(hs.baseUrl, 'PUT', `/_matrix/client/v3/rooms/${enc(event.room_id)}/send/m.room.message/pong-${enc(event.event_id)}`, { msgtype: 'm.notice', body: 'pong' }, { token: AS_TOKEN });
      });
      bot.on('type:m.room.member', (raw: Record<string, unknown>) => seen.push(raw as unknown as MatrixEvent));
      bot.on('ephemeral', (raw: Record<string, unknown>) => ephemeral.push(raw as (typeof ephemeral)[number]));
      const file = join(dir, 'bot.yaml');
      writeFileSync(
        file,
        `id: pingbot\nurl: http://127.0.0.1:${port}\nas_token: ${AS_TOKEN}\nhs_token: ${HS_TOKEN}\nsender_localpart: pingbot\n` +
          `de.sorunome.msc2409.push_ephemeral: true\nnamespaces:\n  users:\n    - exclusive: true\n      regex: '@ping_.*:localhost'\n`,
      );
      hs = await startTestServer({ backend, config: { app_service_config_files: [file] }, appServiceRetry: { minMs: 20, maxMs: 200 } });
    });
    after(async () => {
      await hs?.close();
      await bot.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    const until = async <T>(what: string, fn: () => Promise<T | undefined> | T | undefined): Promise<T> => {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const value = await fn();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };

    test("the bot is sent its room's events and answers as its own user", async () => {
      const alice = await hs.registerUser('alice', 'alice-password');
      const roomId = (await call('POST', '/createRoom', { preset: 'public_chat' }, alice.accessToken))['room_id'] as string;
      await call('POST', `/join/${enc(roomId)}`, {}, AS_TOKEN);
      await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/ping-1`, { msgtype: 'm.text', body: '!ping' }, alice.accessToken);
      const ping = await until('the bot to see !ping', () => seen.find((e) => e.content.body === '!ping'));
      assert.equal(ping.room_id, roomId);
      assert.equal(ping.sender, alice.userId);
      const pong = await until('the pong in alice\'s room', async () => {
        const page = await call('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=10`, undefined, alice.accessToken);
        return (page['chunk'] as MatrixEvent[]).find((e) => e.content.body === 'pong');
      });
      assert.equal(pong.sender, '@pingbot:localhost');
      // The bot hears its own answer too (it is the sender).
      await until('the bot to see its pong', () => seen.find((e) => e.content.body === 'pong'));
    });

    test('the bot registers a user of its namespace and acts as it', async () => {
      const made = await call('POST', '/register', { type: 'm.login.application_service', username: 'ping_carol' }, AS_TOKEN);
      assert.equal(made['user_id'], '@ping_carol:localhost');
      const roomId = (await call('POST', `/createRoom?user_id=${enc('@ping_carol:localhost')}`, {}, AS_TOKEN))['room_id'] as string;
      await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/c1?user_id=${enc('@ping_carol:localhost')}`, { msgtype: 'm.text', body: 'from carol' }, AS_TOKEN);
      const event = await until("carol's message at the bot", () => seen.find((e) => e.content.body === 'from carol'));
      assert.equal(event.sender, '@ping_carol:localhost');
      assert.equal(event.room_id, roomId);
    });

    test('the bot hears typing and receipts in its rooms', async () => {
      const dave = await hs.registerUser('dave', 'dave-password');
      const roomId = (await call('POST', '/createRoom', { preset: 'public_chat' }, dave.accessToken))['room_id'] as string;
      await call('POST', `/join/${enc(roomId)}`, {}, AS_TOKEN);
      await call('PUT', `/rooms/${enc(roomId)}/typing/${enc(dave.userId)}`, { typing: true, timeout: 10_000 }, dave.accessToken);
      const typing = await until('typing at the bot', () => ephemeral.find((e) => e.type === 'm.typing' && e.room_id === roomId));
      assert.deepEqual(typing.content, { user_ids: [dave.userId] });
      const eventId = (await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/d1`, { msgtype: 'm.text', body: 'read me' }, dave.accessToken))['event_id'] as string;
      await call('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, {}, dave.accessToken);
      const receipt = await until('the receipt at the bot', () => ephemeral.find((e) => e.type === 'm.receipt' && e.room_id === roomId));
      assert.deepEqual(Object.keys(receipt.content), [eventId]);
    });
  });
}
