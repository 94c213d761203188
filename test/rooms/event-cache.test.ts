import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventCache } from '../../src/rooms/event-cache.js';
import type { StoredEvent } from '../../src/rooms/stored-event.js';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';

const event = (nid: number, size = 100) => ({ nid, eventId: `$e${nid}`, size }) as StoredEvent;
const nids = (cache: EventCache, all: number[]) => all.filter((n) => cache.get(n) !== undefined);

describe('the parsed-event cache', () => {
  test('keeps at most so many events, least recently used out first', () => {
    const cache = new EventCache({ maxEvents: 3, maxBytes: 1e9, maxAgeMs: 1e9 });
    for (const n of [1, 2, 3]) cache.add(event(n));
    assert.ok(cache.get(1));
    cache.add(event(4));
    assert.deepEqual(nids(cache, [1, 2, 3, 4]), [1, 3, 4]);
    assert.equal(cache.nidOf('$e2'), undefined);
    assert.equal(cache.nidOf('$e3'), 3);
  });

  test('a read moves an event of the older half to the end of the eviction order, one of the newer half stays', () => {
    const cache = new EventCache({ maxEvents: 4, maxBytes: 1e9, maxAgeMs: 1e9 });
    for (const n of [1, 2, 3, 4]) cache.add(event(n));
    assert.ok(cache.get(1)); // older half: moved behind 4
    assert.ok(cache.get(3)); // newer half: stays before 4
    cache.add(event(5));
    cache.add(event(6));
    assert.deepEqual(cache.usage.events, 4);
    // 2 and 3 went first, in the order they were put there; 1, read from the older half, stayed.
    assert.equal(cache.peek(2), undefined);
    assert.equal(cache.peek(3), undefined);
    for (const n of [1, 4, 5, 6]) assert.ok(cache.peek(n), `event ${n} kept`);
  });

  test('keeps at most so many estimated bytes, and nothing larger than all of them', () => {
    const cache = new EventCache({ maxEvents: 100, maxBytes: 1000, maxAgeMs: 1e9 });
    for (const n of [1, 2, 3]) cache.add(event(n, 300));
    assert.deepEqual(cache.usage, { events: 3, bytes: 900 });
    cache.add(event(4, 300));
    assert.deepEqual(cache.usage, { events: 3, bytes: 900 });
    assert.deepEqual(nids(cache, [1, 2, 3, 4]), [2, 3, 4]);
    cache.add(event(5, 1001));
    assert.equal(cache.get(5), undefined);
    assert.deepEqual(cache.usage, { events: 3, bytes: 900 });
    // The same event again replaces itself, counted once.
    cache.add(event(4, 300));
    assert.deepEqual(cache.usage, { events: 3, bytes: 900 });
    cache.delete('$e4');
    assert.deepEqual(cache.usage, { events: 2, bytes: 600 });
  });

  test('reads an event again once it is older than the age bound', () => {
    let now = 0;
    const cache = new EventCache({ maxEvents: 10, maxBytes: 1e9, maxAgeMs: 1000, now: () => now });
    cache.add(event(1));
    now = 1000;
    assert.ok(cache.get(1));
    now = 1001;
    assert.equal(cache.get(1), undefined);
    assert.deepEqual(cache.usage, { events: 0, bytes: 0 });
  });
});

for (const { backend, skip } of await serverBackends()) {
  describe(`global.cache.max_size_estimated bounds the event cache on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { global: { cache: { max_size_estimated: '16kb' } } } });

    test('paging through a long history keeps the cache within the bound, and every event is served', async () => {
      const alice = await hs.registerUser('alice', 'secret');
      const { rooms } = hs.server.services;
      const { roomId } = await rooms.createRoom({ userId: alice.userId, deviceId: alice.deviceId }, {});
      const padding = 'x'.repeat(1000);
      for (let i = 0; i < 40; i++) {
        await rooms.sendMessage({ userId: alice.userId, deviceId: alice.deviceId }, roomId, 'm.room.message', { msgtype: 'm.text', body: `${i} ${padding}` });
      }
      const res = await new HttpClient(hs.baseUrl, { token: alice.accessToken }).get(`/_chat/client/v3/rooms/${encodeURIComponent(roomId)}/messages?dir=b&limit=100`);
      assert.equal(res.status, 200);
      const bodies = (res.body as { chunk: { type: string; content: { body?: string } }[] }).chunk
        .filter((e) => e.type === 'm.room.message')
        .map((e) => Number(e.content.body!.split(' ')[0]));
      assert.deepEqual(bodies, [...Array(40).keys()].reverse());
      const usage = rooms.reader.cacheUsage;
      assert.ok(usage.events > 0 && usage.bytes <= 16 * 1024, JSON.stringify(usage));
    });
  });
}
