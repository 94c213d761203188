// Deeply nested JSON bodies: up to MAX_JSON_DEPTH levels are stored and served back (through every
// recursive path: canonical JSON, hashing, redaction, push rules, sync); one level more is
// 400 M_BAD_JSON on every route and nothing is stored. Real server, SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, jsonTextDepth } from '../../src/http/body.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { ApiClient, enc } from '../e2e/support/client.js';

/** An object `levels` deep counting itself: {"k":{"k":...{"leaf":true}}}, under `extra` at the top. */
function nested(levels: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  let inner: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) inner = { k: inner };
  return { ...inner, ...extra };
}

/** The same nesting as JSON text, built without recursion (JSON.stringify overflows far deeper). */
function nestedText(levels: number, extra: Record<string, unknown> = {}): string {
  const head = Object.entries(extra).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)},`).join('');
  return `{${head}${'"k":{'.repeat(levels - 1)}"leaf":true${'}'.repeat(levels)}`;
}

/** Depth of a parsed value, counting the value itself, walked without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    deepest = Math.max(deepest, d);
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

describe('jsonTextDepth', () => {
  test('counts objects and arrays, ignores brackets inside strings', () => {
    assert.equal(jsonTextDepth('{}'), 1);
    assert.equal(jsonTextDepth('{"a":[1,{"b":[]}]}'), 4);
    assert.equal(jsonTextDepth('{"a":"{{{[[[\\"{{"}'), 1);
    assert.equal(jsonTextDepth(nestedText(MAX_JSON_DEPTH)), MAX_JSON_DEPTH);
  });
});

for (const { backend, skip } of await serverBackends()) {
  describe(`JSON nesting limit on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: ApiClient;
    let bob: ApiClient;
    let roomId: string;

    before(async () => {
      const client = async (name: string) => {
        const u = await hs.registerUser(name, `${name}-pw`);
        return new ApiClient(hs.baseUrl, '/_matrix/client/v3', u.userId, u.accessToken, u.deviceId);
      };
      [alice, bob] = await Promise.all([client('alice'), client('bob')]);
      roomId = (await alice.ok('POST', '/createRoom', { preset: 'public_chat' })).room_id;
      await bob.ok('POST', `/join/${enc(roomId)}`, {});
    });

    const assertTooDeep = (r: { status: number; body: any }, what: string) => {
      assert.equal(r.status, 400, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errcode, 'M_BAD_JSON', what);
      assert.match(r.body.error, /nested/, what);
    };

    test('send: at the limit stored, served, redacted; one deeper and far deeper refused', async () => {
      const body = nested(MAX_JSON_DEPTH, { msgtype: 'm.text', body: 'deep' });
      const eventId = (await alice.ok('PUT', `/rooms/${enc(roomId)}/send/m.room.message/at-limit`, body)).event_id;
      const event = await bob.ok('GET', `/rooms/${enc(roomId)}/event/${enc(eventId)}`);
      assert.equal(depthOf(event.content), MAX_JSON_DEPTH);
      // Bob's sync carries it (push rules evaluated it for his unread count).
      const sync = await bob.sync({ filter: { room: { timeline: { limit: 5 } } } });
      const timeline = sync.rooms.join[roomId].timeline.events as any[];
      assert.ok(timeline.some((e) => e.event_id === eventId));
      const messages = await bob.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=3`);
      assert.equal(messages.chunk[0].event_id, eventId);
      await alice.ok('PUT', `/rooms/${enc(roomId)}/redact/${enc(eventId)}/r1`, { reason: 'too deep' });
      assert.deepEqual((await bob.ok('GET', `/rooms/${enc(roomId)}/event/${enc(eventId)}`)).content, {});

      for (const levels of [MAX_JSON_DEPTH + 1, 5000, 8000, 20000]) {
        const txn = `deep-${levels}`;
        const r = await alice.call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/${txn}`, undefined, {
          rawBody: nestedText(levels, { msgtype: 'm.text', body: 'too deep' }),
        });
        assertTooDeep(r, `send ${levels}`);
      }
      // Nothing was stored: the last event is still the redaction.
      const after = await bob.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=1`);
      assert.equal(after.chunk[0].type, 'm.room.redaction');
      // Deep arrays count too.
      const arrays = `{"msgtype":"m.text","body":"x","a":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`;
      assertTooDeep(await alice.call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/arrays`, undefined, { rawBody: arrays }), 'arrays');
    });

    test('state: at the limit accepted, deeper refused', async () => {
      const path = `/rooms/${enc(roomId)}/state/org.example.deep/`;
      await alice.ok('PUT', path, nested(MAX_JSON_DEPTH));
      assertTooDeep(await alice.call('PUT', path, undefined, { rawBody: nestedText(MAX_JSON_DEPTH + 1) }), 'state');
      assert.equal(depthOf(await alice.ok('GET', path)), MAX_JSON_DEPTH);
    });

    test('filter: at the limit accepted and read back, deeper refused', async () => {
      const path = `/user/${enc(alice.userId)}/filter`;
      const ok = await alice.ok('POST', path, nested(MAX_JSON_DEPTH, { room: { timeline: { limit: 3 } } }));
      const stored = await alice.ok('GET', `${path}/${enc(ok.filter_id)}`);
      assert.deepEqual(stored.room, { timeline: { limit: 3 } });
      assert.equal((await alice.sync({ filter: ok.filter_id })).rooms.join[roomId].timeline.events.length <= 3, true);
      for (const levels of [MAX_JSON_DEPTH + 1, 8000]) {
        assertTooDeep(await alice.call('POST', path, undefined, { rawBody: nestedText(levels) }), `filter ${levels}`);
      }
    });

    test('account data: at the limit stored and synced, deeper refused and not stored', async () => {
      const path = (type: string) => `/user/${enc(alice.userId)}/account_data/${type}`;
      await alice.ok('PUT', path('org.example.deep'), nested(MAX_JSON_DEPTH));
      assert.equal(depthOf(await alice.ok('GET', path('org.example.deep'))), MAX_JSON_DEPTH);
      const sync = await alice.sync();
      const deep = (sync.account_data.events as any[]).find((e) => e.type === 'org.example.deep');
      assert.equal(depthOf(deep.content), MAX_JSON_DEPTH);
      const roomPath = `/user/${enc(alice.userId)}/rooms/${enc(roomId)}/account_data/org.example.deeper`;
      for (const levels of [MAX_JSON_DEPTH + 1, 5000, 8000]) {
        assertTooDeep(await alice.call('PUT', path('org.example.deeper'), undefined, { rawBody: nestedText(levels) }), `account data ${levels}`);
        assertTooDeep(await alice.call('PUT', roomPath, undefined, { rawBody: nestedText(levels) }), `room account data ${levels}`);
      }
      assert.equal((await alice.call('GET', path('org.example.deeper'))).status, 404);
      assert.equal((await alice.call('GET', roomPath)).status, 404);
    });
  });
}
