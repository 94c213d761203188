// The client API's questions about other servers' users and rooms, asked over federation: hs1.test
// (127.0.0.2, naming `chat`) and hs2.test (127.0.0.3, naming `matrix`) over real TLS. Alice on hs1
// reads bob@hs2's device and cross-signing keys (/keys/query), claims his one-time keys
// (/keys/claim) and lists hs2's public rooms (/publicRooms?server=hs2.test). A server with no DNS
// record and one that never answers are reported under `failures` while the others are answered;
// another server's directory that cannot be reached is a 502. Last, what a server answers beyond
// what it was asked is dropped (a stub in place of the federation client).

import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FederationRequest, FederationResponse } from '../../src/federation/client.js';
import { remoteKeys } from '../../src/federation/remote-keys.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { CrossSigning, Ed25519Key, deviceKeys, type Signed } from '../client/e2ee-keys.js';
import { enc, request } from '../e2e/support/client.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

/** A TCP listener that accepts connections and never says a word: a server that does not answer. */
async function startSilentServer(address: string): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

for (const { backend, skip } of await serverBackends()) {
  describe(`the client API asks other servers, on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let silent: Awaited<ReturnType<typeof startSilentServer>>;
    let alice: TestUser;
    let bob: TestUser;
    let bobKeys: Signed;
    const bobOneTimeKeys: Record<string, Signed> = {};
    let bobCs: CrossSigning;

    const asAlice = (method: string, path: string, body?: unknown) => request(hs1.baseUrl, method, path, body, { token: alice.accessToken });

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend });
      silent = await startSilentServer('127.0.0.4');
      net.dns.set('silent.test', { a: ['127.0.0.4'] });
      net.dns.set('_chat._tcp.silent.test', { srv: [{ target: 'silent.test', port: silent.port }] });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');

      const device = new Ed25519Key();
      bobKeys = deviceKeys(bob.userId, bob.deviceId, device);
      for (const id of ['AAA', 'BBB']) {
        bobOneTimeKeys[`signed_curve25519:${id}`] = device.sign({ key: `one-time-${id}` }, bob.userId, `ed25519:${bob.deviceId}`);
      }
      const upload = await request(hs2.baseUrl, 'POST', '/_chat/client/v3/keys/upload', { device_keys: bobKeys, one_time_keys: bobOneTimeKeys }, { token: bob.accessToken });
      assert.equal(upload.status, 200, JSON.stringify(upload.body));
      bobCs = new CrossSigning(bob.userId);
      const cs = await request(hs2.baseUrl, 'POST', '/_chat/client/v3/keys/device_signing/upload', bobCs.upload(), { token: bob.accessToken });
      assert.equal(cs.status, 200, JSON.stringify(cs.body));
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await silent?.close();
      await net?.close();
    });

    test("alice on hs1 reads bob@hs2's device keys and cross-signing keys, asked of hs2", async () => {
      const res = await asAlice('POST', '/_chat/client/v3/keys/query', { device_keys: { [bob.userId]: [], [alice.userId]: [] } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const body = res.body as any;
      assert.deepEqual(body.failures, {});
      assert.deepEqual(Object.keys(body.device_keys).sort(), [alice.userId, bob.userId].sort());
      assert.deepEqual(body.device_keys[alice.userId], {});
      const got = body.device_keys[bob.userId][bob.deviceId];
      for (const field of ['user_id', 'device_id', 'algorithms', 'keys', 'signatures']) assert.deepEqual(got[field], bobKeys[field], field);
      assert.deepEqual(body.master_keys[bob.userId], bobCs.masterKey);
      assert.deepEqual(body.self_signing_keys[bob.userId], bobCs.selfSigningKey);
      // Another user's user-signing key is never shown, and hs2 does not send it.
      assert.equal(body.user_signing_keys[bob.userId], undefined);

      // Under the other prefix too; a device that does not exist is simply absent.
      const some = await request(hs1.baseUrl, 'POST', '/_matrix/client/v3/keys/query', { device_keys: { [bob.userId]: [bob.deviceId, 'NOSUCH'] } }, { token: alice.accessToken });
      assert.equal(some.status, 200, JSON.stringify(some.body));
      assert.deepEqual(Object.keys((some.body as any).device_keys[bob.userId]), [bob.deviceId]);
      // A user hs2 does not have has no devices.
      const nobody = await asAlice('POST', '/_chat/client/v3/keys/query', { device_keys: { '@nobody:hs2.test': [] } });
      assert.equal(nobody.status, 200);
      assert.deepEqual((nobody.body as any).failures, {});
      assert.deepEqual((nobody.body as any).device_keys['@nobody:hs2.test'] ?? {}, {});
    });

    test("alice claims bob's one-time keys one at a time, until there are none", async () => {
      const claim = () => asAlice('POST', '/_chat/client/v3/keys/claim', { one_time_keys: { [bob.userId]: { [bob.deviceId]: 'signed_curve25519' } } });
      const claimed: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await claim();
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual((res.body as any).failures, {});
        const keys = (res.body as any).one_time_keys[bob.userId][bob.deviceId] as Record<string, Signed>;
        assert.equal(Object.keys(keys).length, 1);
        const [id, key] = Object.entries(keys)[0]!;
        assert.deepEqual(key, bobOneTimeKeys[id]);
        claimed.push(id);
      }
      assert.deepEqual(claimed.sort(), Object.keys(bobOneTimeKeys).sort());
      const none = await claim();
      assert.equal(none.status, 200);
      assert.deepEqual(none.body, { one_time_keys: {}, failures: {} });
    });

    test("alice lists hs2's public rooms with ?server=hs2.test, by GET and POST, page by page", async () => {
      const create = (name: string) =>
        request(hs2.baseUrl, 'POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', visibility: 'public', name }, { token: bob.accessToken });
      const lobby = (await create("Bob's lobby")).body!.room_id as string;
      const garden = (await create("Bob's garden")).body!.room_id as string;
      // A room of hs1's own, which hs2's directory does not list.
      await asAlice('POST', '/_chat/client/v3/createRoom', { preset: 'public_chat', visibility: 'public', name: "Alice's hall" });

      const all = await asAlice('GET', '/_chat/client/v3/publicRooms?server=hs2.test');
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const chunk = (all.body as any).chunk as JsonObject[];
      assert.deepEqual(chunk.map((r) => r['room_id']).sort(), [lobby, garden].sort());
      const entry = chunk.find((r) => r['room_id'] === lobby)!;
      assert.equal(entry['name'], "Bob's lobby");
      assert.equal(entry['num_joined_members'], 1);
      assert.equal(entry['world_readable'], false);
      assert.equal(entry['guest_can_join'], false);
      assert.equal((all.body as any).total_room_count_estimate, 2);

      const first = await asAlice('GET', '/_chat/client/v3/publicRooms?server=hs2.test&limit=1');
      assert.equal(first.status, 200);
      assert.equal((first.body as any).chunk.length, 1);
      const next = (first.body as any).next_batch as string;
      assert.equal(typeof next, 'string');
      const second = await asAlice('GET', `/_chat/client/v3/publicRooms?server=hs2.test&limit=1&since=${enc(next)}`);
      assert.equal(second.status, 200);
      assert.equal(typeof (second.body as any).prev_batch, 'string');
      assert.deepEqual([...(first.body as any).chunk, ...(second.body as any).chunk].map((r: JsonObject) => r['room_id']).sort(), [lobby, garden].sort());

      const searched = await asAlice('POST', '/_chat/client/v3/publicRooms?server=hs2.test', { limit: 10, filter: { generic_search_term: 'garden' } });
      assert.equal(searched.status, 200, JSON.stringify(searched.body));
      assert.deepEqual((searched.body as any).chunk.map((r: JsonObject) => r['room_id']), [garden]);
      const unfiltered = await asAlice('POST', '/_matrix/client/r0/publicRooms?server=hs2.test', {});
      assert.equal((unfiltered.body as any).chunk.length, 2);

      // This server's own directory is unchanged, named or not, and readable without a token.
      const own = await request(hs1.baseUrl, 'GET', '/_chat/client/v3/publicRooms?server=hs1.test');
      assert.equal(own.status, 200);
      assert.deepEqual((own.body as any).chunk.map((r: JsonObject) => r['name']), ["Alice's hall"]);
      // Another server's takes a user.
      const anonymous = await request(hs1.baseUrl, 'GET', '/_chat/client/v3/publicRooms?server=hs2.test');
      assert.equal(anonymous.status, 401);
      const badName = await asAlice('GET', `/_chat/client/v3/publicRooms?server=${enc('not a server')}`);
      assert.equal(badName.status, 400);
      assert.equal(badName.body!.errcode, 'M_INVALID_PARAM');
    });

    test('servers that cannot be reached or do not answer in time are failures; the others are answered', async () => {
      const started = Date.now();
      const res = await asAlice('POST', '/_chat/client/v3/keys/query', {
        device_keys: { [bob.userId]: [], '@x:nowhere.test': [], '@y:silent.test': [] },
        timeout: 1500,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(Date.now() - started < 6_000, 'the timeout bounds the wait');
      const body = res.body as any;
      assert.deepEqual(Object.keys(body.device_keys), [bob.userId]);
      assert.ok(body.device_keys[bob.userId][bob.deviceId]);
      assert.deepEqual(Object.keys(body.failures).sort(), ['nowhere.test', 'silent.test']);
      assert.deepEqual(body.failures['nowhere.test'], { status: 503, message: 'Could not reach nowhere.test' });
      assert.deepEqual(body.failures['silent.test'], { status: 503, message: 'silent.test did not answer in time' });

      // The timeout may be given in the query string too (as Synapse reads it).
      const claim = await asAlice('POST', '/_chat/client/v3/keys/claim?timeout=1000', {
        one_time_keys: { '@x:nowhere.test': { DEV: 'signed_curve25519' }, '@y:silent.test': { DEV: 'signed_curve25519' }, [bob.userId]: { [bob.deviceId]: 'signed_curve25519' } },
      });
      assert.equal(claim.status, 200, JSON.stringify(claim.body));
      assert.deepEqual((claim.body as any).one_time_keys, {});
      assert.deepEqual(Object.keys((claim.body as any).failures).sort(), ['nowhere.test', 'silent.test']);
    });

    test("another server's directory that cannot be reached is a 502 naming only that server", async () => {
      const res = await asAlice('GET', '/_chat/client/v3/publicRooms?server=nowhere.test');
      assert.equal(res.status, 502);
      assert.deepEqual(res.body, { errcode: 'M_UNKNOWN', error: 'Could not reach nowhere.test for the public room directory' });
      const post = await asAlice('POST', '/_chat/client/v3/publicRooms?server=nowhere.test', { filter: { generic_search_term: 'x' } });
      assert.equal(post.status, 502);
      assert.equal(post.body!.error, 'Could not reach nowhere.test for the public room directory');
    });
  });
}

describe("what another server answers beyond what it was asked is dropped", () => {
  const stub = (answer: JsonObject) => {
    const sent: FederationRequest[] = [];
    const client = {
      request: async (req: FederationRequest): Promise<FederationResponse> => {
        sent.push(req);
        return { status: 200, body: answer };
      },
    };
    return { sent, client };
  };
  const device = (userId: string, deviceId: string) => ({ user_id: userId, device_id: deviceId, algorithms: [], keys: {}, signatures: {} });
  const csKey = (userId: string, usage: string) => ({ user_id: userId, usage: [usage], keys: { 'ed25519:k': 'k' } });

  test('keys of users and devices not asked, or filed under the wrong user or device', async () => {
    const bob = '@bob:remote.test';
    const { sent, client } = stub({
      device_keys: {
        [bob]: { D1: device(bob, 'D1'), D2: device(bob, 'D2'), D3: device('@eve:remote.test', 'D3'), D4: device(bob, 'other'), D5: 'not keys' },
        '@carol:remote.test': { C1: device('@carol:remote.test', 'C1') },
        '@mallory:elsewhere.test': { M1: device('@mallory:elsewhere.test', 'M1') },
      },
      master_keys: { [bob]: csKey(bob, 'master'), '@mallory:elsewhere.test': csKey('@mallory:elsewhere.test', 'master') },
      self_signing_keys: { [bob]: csKey('@eve:remote.test', 'self_signing') },
    });
    const result = await remoteKeys(client).query(new Map([['remote.test', { [bob]: ['D1', 'D3', 'D4', 'D5'] }]]), 1000);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.body, { device_keys: { [bob]: ['D1', 'D3', 'D4', 'D5'] } });
    assert.deepEqual(result, {
      device_keys: { [bob]: { D1: device(bob, 'D1') } },
      master_keys: { [bob]: csKey(bob, 'master') },
      self_signing_keys: {},
      failures: {},
    });
  });

  test('one-time keys of users, devices or algorithms not asked', async () => {
    const bob = '@bob:remote.test';
    const { client } = stub({
      one_time_keys: {
        [bob]: { D1: { 'signed_curve25519:A': { key: 'a' } }, D2: { 'signed_curve25519:B': { key: 'b' } }, D3: { 'curve25519:C': 'c' } },
        '@mallory:elsewhere.test': { M1: { 'signed_curve25519:M': { key: 'm' } } },
      },
    });
    const result = await remoteKeys(client).claim(new Map([['remote.test', { [bob]: { D1: 'signed_curve25519', D3: 'signed_curve25519' } }]]), 1000);
    assert.deepEqual(result, { one_time_keys: { [bob]: { D1: { 'signed_curve25519:A': { key: 'a' } } } }, failures: {} });
  });

  test("an error answer is a failure with the server's status, not its words", async () => {
    const client = { request: async (): Promise<FederationResponse> => ({ status: 403, body: { errcode: 'M_FORBIDDEN', error: 'secret details' } }) };
    const result = await remoteKeys(client).query(new Map([['remote.test', { '@bob:remote.test': [] }]]), 1000);
    assert.deepEqual(result.failures, { 'remote.test': { status: 403, message: 'remote.test answered 403' } });
    assert.deepEqual(result.device_keys, {});
  });
});
