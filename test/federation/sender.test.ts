// The federation sender against a receiving server the test runs: hs1.test (a real Hearth server)
// and rx.test, a small HTTPS server on 127.0.0.4 that publishes its key and records the
// transactions it is sent. rx.test's user joins alice's room with a transaction of its own; from
// then on alice's messages reach rx.test in order, and none is lost while rx.test is stopped, fails,
// or is marked down after too many failures.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stateKey } from '../../src/protocol/events.js';
import { hashAndSignEventWithId, type PduDraft } from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { requestAuthorization } from '../../src/protocol/request-auth.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { RemoteServer } from '../support/remote-server.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestHttpsServer, listenHttps, type IssuedCertificate } from '../support/test-ca.js';
import type { TestServer, TestUser } from '../support/server.js';

const RX = 'rx.test';
const DAVE = `@dave:${RX}`;

interface Received {
  readonly txnId: string;
  readonly pdus: JsonObject[];
  readonly edus: JsonObject[];
}

describe('the federation sender', () => {
  let net: FederationNet;
  let hs1: TestServer;
  let alice: TestUser;
  let roomId: string;
  let rxCert: IssuedCertificate;
  let rxServer: TestHttpsServer | undefined;
  let rxPort = 0;
  const rx = new RemoteServer({ serverName: RX });
  const received: Received[] = [];
  /** How rx.test answers transactions: 200, or a failure. */
  let answer: 'ok' | 'fail' = 'ok';
  let failures = 0;
  let lastFailedTxnId: string | undefined;

  function handler(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const url = req.url ?? '';
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (url.startsWith('/_chat/key/v2/server')) return json(200, rx.keys());
      const send = /^\/_chat\/federation\/v1\/send\/([^/?]+)/.exec(url);
      if (send !== null && req.method === 'PUT') {
        if (answer === 'fail') {
          failures++;
          lastFailedTxnId = decodeURIComponent(send[1]!);
          return json(500, { errcode: 'M_UNKNOWN', error: 'not now' });
        }
        const txn = JSON.parse(body) as { pdus: JsonObject[]; edus?: JsonObject[] };
        received.push({ txnId: decodeURIComponent(send[1]!), pdus: txn.pdus, edus: txn.edus ?? [] });
        return json(200, { pdus: Object.fromEntries(txn.pdus.map((p) => [String(p['event_id'] ?? ''), {}])) });
      }
      json(404, { errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
    });
  }

  async function startRx(): Promise<void> {
    rxServer = await listenHttps('127.0.0.4', rxPort, rxCert, handler);
    rxPort = rxServer.port;
    net.dns.set(RX, { a: ['127.0.0.4'] });
    net.dns.set(`_chat._tcp.${RX}`, { srv: [{ target: RX, port: rxPort }] });
  }

  /** Bodies of alice's messages rx.test received, in the order received, each once. */
  function receivedBodies(): string[] {
    const seen = new Set<string>();
    const out: string[] = [];
    for (const t of received) {
      for (const p of t.pdus) {
        const body = (p['content'] as JsonObject | undefined)?.['body'];
        const key = JSON.stringify(p['hashes']);
        if (p['type'] !== 'm.room.message' || typeof body !== 'string' || seen.has(key)) continue;
        seen.add(key);
        out.push(body);
      }
    }
    return out;
  }

  async function say(...bodies: string[]): Promise<void> {
    for (const body of bodies) {
      const res = await request(hs1.baseUrl, 'PUT', `/_chat/client/v3/rooms/${enc(roomId)}/send/m.room.message/${enc(body)}`, { msgtype: 'm.text', body }, { token: alice.accessToken });
      assert.equal(res.status, 200);
    }
  }

  /** A transaction from rx.test to hs1.test, signed as rx.test. */
  async function sendToHs1(txnId: string, pdus: unknown[]): Promise<JsonObject> {
    const uri = `/_matrix/federation/v1/send/${txnId}`;
    const content = { origin: RX, origin_server_ts: Date.now(), pdus } as unknown as JsonObject;
    const authorization = requestAuthorization('X-Matrix', { method: 'PUT', uri, origin: RX, destination: 'hs1.test', content }, rx.signingKey);
    const res = await request(hs1.baseUrl, 'PUT', uri, content, { token: null, headers: { authorization } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body!;
  }

  before(async () => {
    net = await startFederationNet();
    rxCert = net.ca.issue([RX]);
    await startRx();
    hs1 = await startFederatedServer(net, {
      name: 'hs1.test',
      address: '127.0.0.2',
      config: { federation_api: { send_max_retries: 8 } },
      // Pauses long enough that a stop of a few seconds stays short of the 8 failures that mark it
      // down, however slow the machine; short enough that reaching them takes about 5 s.
      federation: { senderRetry: { minMs: 50, maxMs: 2000 } },
    });
    alice = await hs1.registerUser('alice', 'alice-password');
    const created = await request(hs1.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', room_version: '10' }, { token: alice.accessToken });
    roomId = created.body!.room_id as string;

    // Dave of rx.test joins with a join event rx.test signed, pushed in a transaction.
    const db = hs1.server.core.db;
    const state = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/state`, undefined, { token: alice.accessToken });
    const ids = new Map((state.body as unknown as JsonObject[]).map((e) => [stateKey(e['type'] as string, e['state_key'] as string), e['event_id'] as string]));
    const tips = await db
      .selectFrom('forward_extremities as f')
      .innerJoin('rooms as r', 'r.room_nid', 'f.room_nid')
      .innerJoin('events as e', 'e.event_nid', 'f.event_nid')
      .select(['e.event_id', 'e.depth'])
      .where('r.room_id', '=', roomId)
      .execute();
    const joinEvent = hashAndSignEventWithId(
      {
        room_id: roomId,
        type: 'm.room.member',
        state_key: DAVE,
        sender: DAVE,
        content: { membership: 'join' },
        origin_server_ts: Date.now(),
        prev_events: tips.map((t) => t.event_id),
        auth_events: ['m.room.create', 'm.room.join_rules', 'm.room.power_levels'].map((t) => ids.get(stateKey(t, ''))!),
        depth: Math.max(...tips.map((t) => Number(t.depth))) + 1,
      } as PduDraft,
      RX,
      rx.signingKey,
      getRoomVersion('10')!,
    );
    const answered = await sendToHs1('join', [joinEvent.pdu]);
    assert.deepEqual(answered, { pdus: { [joinEvent.eventId]: {} } });
  });

  after(async () => {
    await hs1?.close();
    await new Promise<void>((resolve) => (rxServer ? rxServer.server.close(() => resolve()) : resolve()));
    await net?.close();
  });

  test("alice's messages reach the server of a member of her room, in order", async () => {
    await eventually(() => hs1.server.services.federationSender!.destinations.includes(RX), 'the sender has a queue for rx.test');
    await say('one', 'two', 'three');
    await eventually(() => receivedBodies().length >= 3, 'three messages at rx.test');
    assert.deepEqual(receivedBodies(), ['one', 'two', 'three']);
    for (const t of received) assert.ok(t.pdus.length <= 50);
  });

  test('a failing destination gets everything once it answers again, the same transaction retried', async () => {
    answer = 'fail';
    failures = 0;
    await say('f1', 'f2');
    await eventually(() => failures >= 3, 'three failed attempts');
    answer = 'ok';
    await eventually(() => receivedBodies().length >= 5, 'the two messages after the failures');
    assert.deepEqual(receivedBodies().slice(3), ['f1', 'f2']);
    // What finally went through is the transaction that failed last, under the same id.
    const delivered = received.find((t) => t.pdus.some((p) => (p['content'] as JsonObject)['body'] === 'f1'))!;
    assert.equal(delivered.txnId, lastFailedTxnId);
  });

  test('a destination stopped while 50 messages are sent gets all 50, in order, once it is back', async () => {
    await new Promise<void>((resolve) => rxServer!.server.close(() => resolve()));
    rxServer = undefined;
    const bodies = Array.from({ length: 50 }, (_, i) => `m${i}`);
    await say(...bodies);
    await new Promise((r) => setTimeout(r, 300));
    await startRx();
    await eventually(() => receivedBodies().length >= 55, 'fifty messages after the restart', 15_000);
    assert.deepEqual(receivedBodies().slice(5), bodies);
  });

  test("alice's typing and public read receipts reach rx.test; her private ones do not", async () => {
    const edus = () => received.flatMap((t) => t.edus);
    const typed = await request(hs1.baseUrl, 'PUT', `/_chat/client/v3/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: true, timeout: 10_000 }, { token: alice.accessToken });
    assert.equal(typed.status, 200);
    await eventually(() => edus().some((e) => e['edu_type'] === 'm.typing'), 'a typing EDU');
    assert.deepEqual(edus().find((e) => e['edu_type'] === 'm.typing')!['content'], { room_id: roomId, user_id: alice.userId, typing: true });

    await say('read me');
    const messages = await request(hs1.baseUrl, 'GET', `/_chat/client/v3/rooms/${enc(roomId)}/messages?dir=b&limit=1`, undefined, { token: alice.accessToken });
    const eventId = (messages.body!.chunk as JsonObject[])[0]!['event_id'] as string;
    for (const type of ['m.read.private', 'm.read']) {
      const read = await request(hs1.baseUrl, 'POST', `/_chat/client/v3/rooms/${enc(roomId)}/receipt/${type}/${enc(eventId)}`, {}, { token: alice.accessToken });
      assert.equal(read.status, 200);
    }
    await eventually(() => edus().some((e) => e['edu_type'] === 'm.receipt'), 'a receipt EDU');
    const receipts = edus().filter((e) => e['edu_type'] === 'm.receipt');
    assert.equal(receipts.length, 1);
    const byType = (receipts[0]!['content'] as Record<string, Record<string, Record<string, { event_ids: string[] }>>>)[roomId]!;
    assert.deepEqual(Object.keys(byType), ['m.read']);
    assert.deepEqual(byType['m.read']![alice.userId]!.event_ids, [eventId]);
  });

  test('a destination down after too many failures is tried again when it contacts us, and sent the newest event', async () => {
    answer = 'fail';
    failures = 0;
    await say('d1', 'd2', 'd3');
    // Eight failures in a row (send_max_retries), about 5 s, mark it down for an hour.
    await eventually(() => failures >= 8, 'eight failed attempts', 30_000);
    const before = receivedBodies().length;
    answer = 'ok';
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(receivedBodies().length, before, 'nothing is sent to a server that is down');
    // rx.test speaks to hs1: it is tried again at once, with the room's newest event only.
    await sendToHs1('hello', []);
    await eventually(() => receivedBodies().length > before, 'the newest event after the contact');
    assert.deepEqual(receivedBodies().slice(before), ['d3']);
  });
});
