import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storageBackends } from '../support/databases.js';
import { enc, SERVER, startUserDataServer, type TestUser, type UserDataServer } from './user-data-http.js';

for (const backend of await storageBackends()) {
  describe(`typing, receipts and send-to-device over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let s: UserDataServer;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;
    const room = `!room:${SERVER}`;

    before(async () => {
      s = await startUserDataServer(backend.create);
      alice = await s.user('alice');
      bob = await s.user('bob');
      carol = await s.user('carol');
      s.rooms.join(room, alice.userId, bob.userId).addEvent(room, '$a', 1).addEvent(room, '$b', 2).addEvent(room, '$c', 3);
    });
    after(() => s.close());

    const expectError = (r: { status: number; body: Record<string, unknown> }, status: number, errcode: string) => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body['errcode'], errcode);
    };
    const waitFor = (userId: string, roomIds: string[] = []) =>
      s.notifier.wait({ userId, roomIds, since: s.notifier.current(), timeoutMs: 3000 });

    test('typing: start wakes room-mates and shows in typingSince; stop clears it', async () => {
      const path = `/rooms/${enc(room)}/typing/${enc(alice.userId)}`;
      const since = s.services.typing.currentPosition();
      const woken = waitFor(bob.userId, [room]);
      const r = await s.call('PUT', path, { token: alice.token, body: { typing: true, timeout: 20_000 } });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, {});
      assert.equal(await woken, true);
      assert.deepEqual(s.services.typing.typingSince([room], since), new Map([[room, [alice.userId]]]));
      assert.equal((await s.call('PUT', `/_matrix/client/r0/rooms/${enc(room)}/typing/${enc(alice.userId)}`, { token: alice.token, body: { typing: false } })).status, 200);
      assert.deepEqual(s.services.typing.typingIn(room), []);
    });

    test('typing errors', async () => {
      const path = `/rooms/${enc(room)}/typing/${enc(alice.userId)}`;
      expectError(await s.call('PUT', path, { token: bob.token, body: { typing: true } }), 403, 'M_FORBIDDEN');
      expectError(await s.call('PUT', `/rooms/${enc(room)}/typing/${enc(carol.userId)}`, { token: carol.token, body: { typing: true } }), 403, 'M_FORBIDDEN');
      expectError(await s.call('PUT', path, { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
      expectError(await s.call('PUT', path, { token: alice.token, body: { typing: 'yes' } }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', path, { token: alice.token, body: { typing: true, timeout: '30s' } }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', path, { token: alice.token, body: { typing: true, timeout: -5 } }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('PUT', path, { body: { typing: true } }), 401, 'M_MISSING_TOKEN');
    });

    test('receipts: public ones reach the room, private ones their owner only', async () => {
      const since = s.notifier.current().receipts;
      const woken = waitFor(bob.userId, [room]);
      let r = await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$b')}`, { token: alice.token, body: {} });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, {});
      assert.equal(await woken, true);
      r = await s.call('POST', `/rooms/${enc(room)}/receipt/m.read.private/${enc('$c')}`, { token: alice.token });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      r = await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$c')}`, { token: bob.token, body: { thread_id: 'main' } });
      assert.equal(r.status, 200);

      const forBob = await s.services.receipts.receiptsSince(bob.userId, [room], since);
      assert.equal(JSON.stringify([...forBob]).includes('m.read.private'), false, 'private receipt leaked');
      const bobView = forBob.get(room)!;
      assert.deepEqual(Object.keys(bobView[0]!), ['$b']);
      assert.deepEqual(Object.keys(bobView[0]!['$b']!['m.read']!), [alice.userId]);
      assert.equal(bobView[1]!['$c']!['m.read']![bob.userId]!.thread_id, 'main');
      const forAlice = (await s.services.receipts.receiptsSince(alice.userId, [room], since)).get(room)!;
      assert.deepEqual(Object.keys(forAlice[0]!['$c']!), ['m.read.private']);
    });

    test('receipt errors', async () => {
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.seen/${enc('$a')}`, { token: alice.token, body: {} }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$a')}`, { token: alice.token, body: { thread_id: '' } }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.fully_read/${enc('$a')}`, { token: alice.token, body: { thread_id: 'main' } }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$a')}`, { token: carol.token, body: {} }), 403, 'M_FORBIDDEN');
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$zzz')}`, { token: alice.token, body: {} }), 404, 'M_NOT_FOUND');
      expectError(await s.call('POST', `/rooms/${enc(room)}/receipt/m.read/${enc('$a')}`, { token: alice.token, raw: '{' }), 400, 'M_NOT_JSON');
    });

    test('read markers: fully read as room account data, plus receipts', async () => {
      const since = s.notifier.current().receipts;
      const r = await s.call('POST', `/rooms/${enc(room)}/read_markers`, {
        token: bob.token,
        body: { 'm.fully_read': '$b', 'm.read': '$c', 'm.read.private': '$c' },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const marker = await s.call('GET', `/user/${enc(bob.userId)}/rooms/${enc(room)}/account_data/m.fully_read`, { token: bob.token });
      assert.deepEqual(marker.body, { event_id: '$b' });
      // m.fully_read through the receipt endpoint moves the same marker.
      assert.equal((await s.call('POST', `/rooms/${enc(room)}/receipt/m.fully_read/${enc('$c')}`, { token: bob.token, body: {} })).status, 200);
      assert.deepEqual((await s.call('GET', `/user/${enc(bob.userId)}/rooms/${enc(room)}/account_data/m.fully_read`, { token: bob.token })).body, { event_id: '$c' });
      const forAlice = (await s.services.receipts.receiptsSince(alice.userId, [room], since)).get(room)!;
      assert.deepEqual(forAlice, [{ $c: { 'm.read': { [bob.userId]: forAlice[0]!['$c']!['m.read']![bob.userId]! } } }]);

      expectError(await s.call('POST', `/rooms/${enc(room)}/read_markers`, { token: bob.token, body: { 'm.fully_read': 5 } }), 400, 'M_BAD_JSON');
      expectError(await s.call('POST', `/rooms/${enc(room)}/read_markers`, { token: carol.token, body: { 'm.fully_read': '$a' } }), 403, 'M_FORBIDDEN');
      expectError(await s.call('POST', `/rooms/${enc(room)}/read_markers`, { token: bob.token, body: { 'm.read': '$nope' } }), 404, 'M_NOT_FOUND');
    });

    test('send-to-device: delivered to the device once, txnId deduplicated, * reaches all devices', async () => {
      const bobPhone = await s.login('bob');
      const since = s.notifier.current().to_device;
      const woken = waitFor(bob.userId);
      const body = { messages: { [bob.userId]: { [bob.deviceId]: { secret: 1 } } } };
      let r = await s.call('PUT', '/sendToDevice/m.room_key_request/txn1', { token: alice.token, body });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, {});
      assert.equal(await woken, true);
      // A retry with the same txnId sends nothing more.
      r = await s.call('PUT', '/_matrix/client/r0/sendToDevice/m.room_key_request/txn1', { token: alice.token, body });
      assert.equal(r.status, 200);

      const first = await s.services.toDevice.toDeviceFor(bob.userId, bob.deviceId, since);
      assert.deepEqual(first.events, [{ sender: alice.userId, type: 'm.room_key_request', content: { secret: 1 } }]);
      assert.deepEqual((await s.services.toDevice.toDeviceFor(bob.userId, bobPhone.deviceId, since)).events, []);
      // The next sync acknowledges it.
      await s.services.toDevice.deleteToDeviceUpTo(bob.userId, bob.deviceId, first.position);
      assert.deepEqual((await s.services.toDevice.toDeviceFor(bob.userId, bob.deviceId, since)).events, []);

      r = await s.call('PUT', '/sendToDevice/m.secret.send/txn2', { token: alice.token, body: { messages: { [bob.userId]: { '*': { all: true } } } } });
      assert.equal(r.status, 200);
      for (const device of [bob.deviceId, bobPhone.deviceId]) {
        const got = await s.services.toDevice.toDeviceFor(bob.userId, device, first.position);
        assert.deepEqual(got.events.map((e) => e.content), [{ all: true }], device);
      }
    });

    test('send-to-device errors and guests', async () => {
      expectError(await s.call('PUT', '/sendToDevice/m.x/e1', { token: alice.token, body: {} }), 400, 'M_MISSING_PARAM');
      expectError(await s.call('PUT', '/sendToDevice/m.x/e2', { token: alice.token, body: { messages: [] } }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', '/sendToDevice/m.x/e3', { token: alice.token, body: { messages: { bob: { D: {} } } } }), 400, 'M_INVALID_PARAM');
      expectError(await s.call('PUT', '/sendToDevice/m.x/e4', { token: alice.token, body: { messages: { [bob.userId]: { D: 'x' } } } }), 400, 'M_BAD_JSON');
      expectError(await s.call('PUT', '/sendToDevice/m.x/e5', { body: { messages: {} } }), 401, 'M_MISSING_TOKEN');
      const guest = await s.guest();
      const r = await s.call('PUT', '/sendToDevice/m.x/g1', { token: guest.token, body: { messages: { [bob.userId]: { [bob.deviceId]: { from: 'guest' } } } } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    });
  });
}
