// NUL (U+0000) sent to every route the server mounts, in every path parameter, in known query
// parameters, in every string and key of a valid body: nothing answers 5xx, identifiers and keys
// answer 400, SQLite and PostgreSQL answer alike, and free text that is accepted is stored and
// served back unchanged. Routes come from the running server, so routes added later are probed too.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mountPaths } from '../../src/http/prefixes.js';
import type { RouteDef } from '../../src/http/route.js';
import type { JsonValue } from '../../src/protocol/json.js';
import { requestAuthorization } from '../../src/protocol/request-auth.js';
import { enc, request, type Reply } from '../e2e/support/client.js';
import { type Backend, type TestServer, type TestUser, serverBackends, useTestServer } from '../support/server.js';

const NUL = '\u0000';
const PASSWORD = 'a password of some length';

/** What a probe did and what came back; `key` names it the same way on every backend. */
interface Outcome {
  readonly key: string;
  readonly where: 'path' | 'query' | 'key' | 'string';
  readonly status: number;
  readonly errcode: string | undefined;
  /** For an accepted string: whether it was read back unchanged (undefined: no way to read it). */
  readonly readBack?: boolean | undefined;
}

/** The room and ids a probe fills valid path parameters and bodies with. */
interface World {
  readonly hs: TestServer;
  readonly alice: TestUser;
  readonly bob: TestUser;
  readonly roomId: string;
  readonly eventId: string;
  readonly filterId: string;
  readonly keyId: string;
}

let seq = 0;
const unique = (prefix: string) => `${prefix}${++seq}`;

/** A valid value for each path parameter, by name; a parameter not listed gets 'x'. */
function pathValue(w: World, route: RouteDef, name: string): string {
  switch (name) {
    case 'roomId':
    case 'roomIdOrAlias':
      return w.roomId;
    case 'eventType':
      return route.path.includes('/state/') ? 'm.room.topic' : route.path.startsWith('/sendToDevice') ? 'org.example.nul' : 'm.room.message';
    case 'stateKey':
      return 'nul-state';
    case 'txnId':
      return unique('txn');
    case 'eventId':
      return w.eventId;
    case 'roomAlias':
      return `#${unique('nul')}:${w.hs.serverName}`;
    case 'userId':
      return w.alice.userId;
    case 'deviceId':
      return w.alice.deviceId;
    case 'type':
      return 'org.example.nul';
    case 'tag':
      return 'u.nul';
    case 'filterId':
      return w.filterId;
    case 'receiptType':
      return 'm.read';
    case 'scope':
      return 'global';
    case 'kind':
      return 'override';
    case 'ruleId':
      return 'org.example.nul';
    case 'keyId':
      return w.keyId;
    default:
      return 'x';
  }
}

/** Query parameters the spec defines, by route path; every route also gets an unknown one. */
const KNOWN_QUERY: Readonly<Record<string, readonly string[]>> = {
  '/sync': ['filter', 'since', 'full_state', 'set_presence', 'timeout', 'use_state_after'],
  '/rooms/:roomId/messages': ['from', 'to', 'dir', 'limit', 'filter'],
  '/rooms/:roomId/context/:eventId': ['limit', 'filter'],
  '/rooms/:roomId/members': ['at', 'membership', 'not_membership'],
  '/rooms/:roomId/state/:eventType/:stateKey': ['format'],
  '/rooms/:roomId/state/:eventType/': ['format'],
  '/rooms/:roomId/state/:eventType': ['format'],
  '/publicRooms': ['limit', 'since', 'server'],
  '/register': ['kind'],
  '/register/available': ['username'],
  '/register/m.login.registration_token/validity': ['token'],
  '/keys/changes': ['from', 'to'],
  '/join/:roomIdOrAlias': ['via', 'server_name'],
  '/knock/:roomIdOrAlias': ['via', 'server_name'],
  '/notifications': ['from', 'limit', 'only'],
  '/pushrules/:scope/:kind/:ruleId': ['before', 'after'],
};

const QUERY_SAMPLE: Readonly<Record<string, string>> = {
  limit: '10',
  dir: 'b',
  timeout: '0',
  full_state: 'false',
  use_state_after: 'false',
  set_presence: 'offline',
  kind: 'user',
  format: 'content',
  membership: 'join',
  not_membership: 'leave',
  username: 'someone',
};

/** A valid body per route (`METHOD api path`); a route that takes a body and is not here gets genericBody. */
function sampleBody(w: World, route: RouteDef): Record<string, unknown> {
  const me = w.alice.userId;
  const auth = { type: 'm.login.password', identifier: { type: 'm.id.user', user: me }, password: PASSWORD };
  const samples: Record<string, () => Record<string, unknown>> = {
    'POST client /register': () => ({ username: unique('reg'), password: PASSWORD, device_id: 'REGDEV', initial_device_display_name: 'Phone', auth: { type: 'm.login.dummy' } }),
    'POST client /login': () => ({ type: 'm.login.password', identifier: { type: 'm.id.user', user: 'alice' }, password: PASSWORD, device_id: 'LOGINDEV', initial_device_display_name: 'Laptop' }),
    'POST client /account/password': () => ({ new_password: PASSWORD, logout_devices: false, auth }),
    'POST client /account/deactivate': () => ({ auth, erase: false }),
    'PUT client /devices/:deviceId': () => ({ display_name: 'My laptop' }),
    'DELETE client /devices/:deviceId': () => ({ auth }),
    'POST client /delete_devices': () => ({ devices: ['NODEVICE'], auth }),
    'POST admin /register': () => ({ nonce: 'n', username: unique('admin'), displayname: 'Admin', password: PASSWORD, admin: false, mac: '00' }),
    'POST client /createRoom': () => ({
      name: 'A room',
      topic: 'A topic',
      preset: 'private_chat',
      visibility: 'private',
      room_alias_name: unique('created'),
      invite: [w.bob.userId],
      creation_content: { 'm.federate': true },
      initial_state: [{ type: 'org.example.state', state_key: 'k', content: { text: 'state text' } }],
    }),
    'POST client /join/:roomIdOrAlias': () => ({ reason: 'joining' }),
    'POST client /rooms/:roomId/join': () => ({ reason: 'joining' }),
    'POST client /knock/:roomIdOrAlias': () => ({ reason: 'knocking' }),
    'POST client /rooms/:roomId/leave': () => ({ reason: 'leaving' }),
    'POST client /rooms/:roomId/invite': () => ({ user_id: w.bob.userId, reason: 'inviting' }),
    'POST client /rooms/:roomId/kick': () => ({ user_id: w.bob.userId, reason: 'kicking' }),
    'POST client /rooms/:roomId/ban': () => ({ user_id: w.bob.userId, reason: 'banning' }),
    'POST client /rooms/:roomId/unban': () => ({ user_id: w.bob.userId, reason: 'unbanning' }),
    'PUT client /rooms/:roomId/send/:eventType/:txnId': () => ({ msgtype: 'm.text', body: 'hello', format: 'org.matrix.custom.html', formatted_body: '<b>hello</b>' }),
    'PUT client /rooms/:roomId/redact/:eventId/:txnId': () => ({ reason: 'spam' }),
    'PUT client /rooms/:roomId/state/:eventType/:stateKey': () => ({ topic: 'A topic' }),
    'PUT client /rooms/:roomId/state/:eventType/': () => ({ topic: 'A topic' }),
    'PUT client /rooms/:roomId/state/:eventType': () => ({ topic: 'A topic' }),
    'PUT client /directory/room/:roomAlias': () => ({ room_id: w.roomId }),
    'PUT client /directory/list/room/:roomId': () => ({ visibility: 'public' }),
    'POST client /publicRooms': () => ({ limit: 10, filter: { generic_search_term: 'room', room_types: [null, 'm.space'] }, include_all_networks: false }),
    'PUT client /profile/:userId/displayname': () => ({ displayname: 'Alice' }),
    'PUT client /profile/:userId/avatar_url': () => ({ avatar_url: `mxc://${w.hs.serverName}/avatar` }),
    'PUT client /user/:userId/account_data/:type': () => ({ text: 'data', list: ['a'] }),
    'PUT client /user/:userId/rooms/:roomId/account_data/:type': () => ({ text: 'data' }),
    'PUT client /user/:userId/rooms/:roomId/tags/:tag': () => ({ order: 0.5 }),
    'POST client /user/:userId/filter': () => ({ event_fields: ['content.body'], room: { timeline: { limit: 5, types: ['m.room.message'], not_senders: [w.bob.userId] } } }),
    'PUT client /rooms/:roomId/typing/:userId': () => ({ typing: true, timeout: 1000 }),
    'POST client /rooms/:roomId/receipt/:receiptType/:eventId': () => ({ thread_id: 'main' }),
    'POST client /rooms/:roomId/read_markers': () => ({ 'm.fully_read': w.eventId, 'm.read': w.eventId }),
    'PUT client /sendToDevice/:eventType/:txnId': () => ({ messages: { [w.bob.userId]: { [w.bob.deviceId]: { text: 'to a device' } } } }),
    'PUT client /presence/:userId/status': () => ({ presence: 'online', status_msg: 'here' }),
    'POST client /user_directory/search': () => ({ search_term: 'bob', limit: 10 }),
    'PUT client /pushrules/:scope/:kind/:ruleId': () => ({ actions: ['notify'], conditions: [{ kind: 'event_match', key: 'content.body', pattern: 'cake' }] }),
    'PUT client /pushrules/:scope/:kind/:ruleId/enabled': () => ({ enabled: true }),
    'PUT client /pushrules/:scope/:kind/:ruleId/actions': () => ({ actions: ['notify', { set_tweak: 'sound', value: 'default' }] }),
    'POST client /keys/upload': () => ({
      device_keys: { user_id: me, device_id: w.alice.deviceId, algorithms: ['m.olm.v1.curve25519-aes-sha2'], keys: { [`curve25519:${w.alice.deviceId}`]: 'key' }, signatures: {} },
      one_time_keys: { 'signed_curve25519:AAAA': { key: 'otk', signatures: {} } },
    }),
    'POST client /keys/query': () => ({ device_keys: { [w.bob.userId]: [] }, timeout: 1000 }),
    'POST client /keys/claim': () => ({ one_time_keys: { [w.bob.userId]: { [w.bob.deviceId]: 'signed_curve25519' } } }),
  };
  const make = samples[`${route.method} ${route.api} ${route.path}`];
  return make !== undefined ? make() : genericBody(w);
}

const genericBody = (w: World): Record<string, unknown> => ({
  user_id: w.bob.userId,
  room_id: w.roomId,
  event_id: w.eventId,
  type: 'org.example.nul',
  reason: 'a reason',
  body: 'a body',
  name: 'a name',
  topic: 'a topic',
  displayname: 'a name',
  device_id: w.alice.deviceId,
});

/** Routes whose body is JSON; raw and streamed bodies (media uploads) are bytes, NUL included. */
function takesJsonBody(route: RouteDef): boolean {
  const mode = route.body ?? (route.method === 'GET' || route.method === 'DELETE' ? 'none' : 'json');
  return mode === 'json';
}

/** Every string and every key of `value`, each as a copy of `value` with NUL put into it. */
function nulVariants(value: unknown, label = ''): { label: string; where: 'key' | 'string'; body: unknown; text?: string }[] {
  const out: { label: string; where: 'key' | 'string'; body: unknown; text?: string }[] = [];
  if (typeof value === 'string') {
    const text = `${value}${NUL}and more`;
    out.push({ label, where: 'string', body: text, text });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      for (const v of nulVariants(item, `${label}[${i}]`)) out.push({ ...v, body: value.map((x, j) => (j === i ? v.body : x)) });
    });
  } else if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    for (const [k, item] of entries) {
      const renamed = Object.fromEntries(entries.map(([k2, v2]) => [k2 === k ? `${k}${NUL}` : k2, v2]));
      out.push({ label: `${label}.${k} (key)`, where: 'key', body: renamed });
      for (const v of nulVariants(item, `${label}.${k}`)) out.push({ ...v, body: { ...value, [k]: v.body } });
    }
  }
  return out;
}

/** The URL of a route under `_chat` and its newest version, with `values` in its parameters. */
function urlOf(route: RouteDef, values: Record<string, string>): string {
  const paths = mountPaths(route);
  const template = paths.find((p) => p.includes('/v3/')) ?? paths[0]!;
  return template.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => enc(values[name]!));
}

function paramNames(route: RouteDef): string[] {
  return [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
}

async function call(w: World, route: RouteDef, url: string, body?: unknown): Promise<Reply> {
  if (route.auth !== 'server') return request(w.hs.baseUrl, route.method, url, body, { token: w.alice.accessToken });
  // A route for other servers: signed as from the server itself, whose key it knows.
  const { serverName, signingKey } = w.hs.server.core;
  const signed = { method: route.method, uri: url, origin: serverName, destination: serverName, ...(body !== undefined ? { content: body as JsonValue } : {}) };
  return request(w.hs.baseUrl, route.method, url, body, { token: null, headers: { authorization: requestAuthorization('X-Chat', signed, signingKey) } });
}

/**
 * Reads back what an accepted request stored, for the routes that keep free text: whether the
 * string with NUL came back unchanged, both as served and as stored. Undefined: no reader known.
 */
async function readBack(w: World, route: RouteDef, sent: unknown, reply: Reply): Promise<boolean | undefined> {
  if (!route.path.startsWith('/rooms/:roomId/send/') && !route.path.startsWith('/rooms/:roomId/redact/')) return undefined;
  const eventId = reply.body?.event_id as string;
  const served = await request(w.hs.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(w.roomId)}/event/${enc(eventId)}`, undefined, { token: w.alice.accessToken });
  const stored = await w.hs.server.core.db.selectFrom('events').select('json').where('event_id', '=', eventId).executeTakeFirstOrThrow();
  const storedContent = (JSON.parse(stored.json) as { content: Record<string, unknown> }).content;
  const sentFields = Object.entries(sent as Record<string, unknown>);
  return sentFields.every(([k, v]) => isDeepStrictEqual(served.body?.content?.[k], v) && isDeepStrictEqual(storedContent[k], v));
}

function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

async function probeRoute(w: World, route: RouteDef): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const name = `${route.method} ${route.api} ${route.path}`;
  const names = paramNames(route);
  const validValues = () => Object.fromEntries(names.map((n) => [n, pathValue(w, route, n)]));
  const bodyFor = () => (takesJsonBody(route) ? sampleBody(w, route) : undefined);
  // Device ids differ between servers: keys name them by role so both backends' keys match.
  const stable = (key: string) => key.replaceAll(w.alice.deviceId, '{alice device}').replaceAll(w.bob.deviceId, '{bob device}');
  const record = (key: string, where: Outcome['where'], reply: Reply, readBackOk?: boolean) =>
    outcomes.push({ key: `${name} ${stable(key)}`, where, status: reply.status, errcode: reply.body?.errcode, readBack: readBackOk });

  for (const param of names) {
    const values = validValues();
    values[param] = `${values[param]}${NUL}`;
    record(`path :${param}`, 'path', await call(w, route, urlOf(route, values), bodyFor()));
  }

  const query = [...(KNOWN_QUERY[route.api === 'client' ? route.path : ''] ?? []), 'org.example.unknown'];
  for (const q of query) {
    const url = `${urlOf(route, validValues())}?${enc(q)}=${enc(`${QUERY_SAMPLE[q] ?? 'x'}${NUL}`)}`;
    record(`query ${q}`, 'query', await call(w, route, url, bodyFor()));
  }
  record('query name', 'query', await call(w, route, `${urlOf(route, validValues())}?${enc(`limit${NUL}`)}=1`, bodyFor()));

  if (takesJsonBody(route)) {
    for (const variant of nulVariants(sampleBody(w, route))) {
      const reply = await call(w, route, urlOf(route, validValues()), variant.body);
      const accepted = reply.status >= 200 && reply.status < 300;
      record(`body ${variant.label}`, variant.where, reply, accepted ? await readBack(w, route, variant.body, reply) : undefined);
    }
  }
  return outcomes;
}

async function setUp(hs: TestServer): Promise<World> {
  const alice = await hs.registerUser('alice', PASSWORD, { admin: true });
  const bob = await hs.registerUser('bob', PASSWORD);
  const as = (u: TestUser) => ({ token: u.accessToken });
  const created = await request(hs.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_alias_name: 'nul' }, as(alice));
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const roomId = created.body.room_id as string;
  assert.equal((await request(hs.baseUrl, 'POST', `/_chat/client/v3/rooms/${enc(roomId)}/join`, {}, as(bob))).status, 200);
  const sent = await request(hs.baseUrl, 'PUT', `/_chat/client/v3/rooms/${enc(roomId)}/send/m.room.message/setup`, { msgtype: 'm.text', body: 'hi' }, as(alice));
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const filter = await request(hs.baseUrl, 'POST', `/_chat/client/v3/user/${enc(alice.userId)}/filter`, { room: { timeline: { limit: 5 } } }, as(alice));
  assert.equal(filter.status, 200, JSON.stringify(filter.body));
  const keys = await request(hs.baseUrl, 'GET', '/_chat/key/v2/server');
  assert.equal(keys.status, 200);
  const keyId = Object.keys(keys.body.verify_keys as object)[0]!;
  return { hs, alice, bob, roomId, eventId: sent.body.event_id as string, filterId: filter.body.filter_id as string, keyId };
}

const backends = await serverBackends();
const outcomesOf = new Map<Backend, Outcome[]>();

for (const { backend, skip } of backends) {
  describe(`NUL in every request on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let world: World;
    before(async () => {
      world = await setUp(hs);
    });

    test('every route, every parameter and body field: no 5xx, 400 for identifiers and keys, free text kept', async () => {
      const routes = hs.server.routes;
      assert.ok(routes.length > 50, `the server lists its routes (${routes.length})`);
      const outcomes: Outcome[] = [];
      for (const route of routes) outcomes.push(...(await probeRoute(world, route)));
      outcomesOf.set(backend, outcomes);

      const failures: string[] = [];
      for (const o of outcomes) {
        const got = `${o.status} ${o.errcode ?? ''}`;
        if (o.status >= 500) failures.push(`${o.key}: ${got}`);
        else if (o.where === 'path' || o.where === 'query') {
          if (o.status !== 400 || o.errcode !== 'M_INVALID_PARAM') failures.push(`${o.key}: ${got}, wanted 400 M_INVALID_PARAM`);
        } else if (o.where === 'key' || o.status >= 300) {
          if (o.status !== 400 || (o.errcode !== 'M_BAD_JSON' && o.errcode !== 'M_INVALID_PARAM')) failures.push(`${o.key}: ${got}, wanted 400 M_BAD_JSON`);
        } else if (o.readBack === undefined) {
          failures.push(`${o.key}: ${got}: accepted NUL in free text that the test cannot read back; add a reader or refuse it`);
        } else if (!o.readBack) {
          failures.push(`${o.key}: accepted, but the text did not come back unchanged`);
        }
      }
      assert.deepEqual(failures, []);
      // The policy keeps a message's text: at least its body round-trips with NUL in it.
      const body = outcomes.find((o) => o.key === 'PUT client /rooms/:roomId/send/:eventType/:txnId body .body');
      assert.equal(body?.status, 200, 'a message body with NUL is accepted');
      assert.equal(body?.readBack, true);
    });

    test('the server is whole afterwards: the token works and the room syncs with the messages sent', async () => {
      const who = await request(hs.baseUrl, 'GET', '/_chat/client/v3/account/whoami', undefined, { token: world.alice.accessToken });
      assert.equal(who.status, 200);
      const sync = await request(hs.baseUrl, 'GET', '/_chat/client/v3/sync?timeout=0', undefined, { token: world.alice.accessToken });
      assert.equal(sync.status, 200, JSON.stringify(sync.body));
      const messages = await request(hs.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(world.roomId)}/messages?dir=b&limit=100`, undefined, { token: world.alice.accessToken });
      assert.equal(messages.status, 200);
      const bodies = (messages.body.chunk as { type: string; content: { body?: unknown } }[]).filter((e) => e.type === 'm.room.message').map((e) => e.content.body);
      assert.ok(bodies.includes(`hello${NUL}and more`), 'the message with NUL comes back from /messages');
    });
  });
}

// Compared only when both backends run (HEARTH_TEST_BACKENDS may pick one).
const comparable = backends.length === 2 ? (backends.find((b) => b.skip !== false)?.skip ?? false) : 'only one backend runs (HEARTH_TEST_BACKENDS)';
describe('SQLite and PostgreSQL answer every NUL request alike', { skip: comparable }, () => {
  test('the same status and errcode for every request', () => {
    const sqlite = outcomesOf.get('sqlite');
    const postgres = outcomesOf.get('postgres');
    assert.ok(sqlite !== undefined && postgres !== undefined, 'both backends were probed');
    const answers = (outcomes: Outcome[]) => Object.fromEntries(outcomes.map((o) => [o.key, `${o.status} ${o.errcode ?? ''}`]));
    assert.deepEqual(answers(postgres), answers(sqlite));
  });
});
