// The legacy event stream reads a range in two ways: picked from the events stream's range read
// whole (in memory, or one read), or, for a long range, per room and from the user's membership
// changes. On SQLite and PostgreSQL both give the same events, page by page.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventStreamService } from '../../src/sync/event-stream.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc } from './sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`event stream reads on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('a long range read room by room gives what the whole-range read gives', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const shared = await bob.createRoom({ preset: 'public_chat' });
      await alice.join(shared);
      const own = await alice.createRoom({});
      const notHers = await carol.createRoom({ preset: 'public_chat' });
      await alice.ok('GET', '/events?timeout=0');
      const from = (await alice.ok('GET', '/initialSync?limit=0')).end as string;
      await bob.text(shared, 'one');
      await carol.text(notHers, 'not hers');
      await alice.text(own, 'two');
      await alice.leave(shared);
      await bob.text(shared, 'after she left');
      const later = await bob.createRoom({ preset: 'public_chat' });
      await bob.invite(later, alice.userId);
      await alice.join(later);
      await bob.text(later, 'three');

      const { services, core } = hs.server;
      const roomByRoom = new EventStreamService({
        db: core.db,
        notifier: core.notifier,
        rooms: services.rooms.reader,
        typing: services.typing,
        receipts: services.receipts,
        presence: services.presence,
        accountData: services.accountData,
        roomEvent: (actor, roomId, eventId) => services.rooms.getEvent(actor, roomId, eventId),
        // Every range is "long": never read whole.
        windowMaxEvents: 1,
      });
      const pagesOverHttp: string[][] = [];
      const pagesRoomByRoom: string[][] = [];
      let token = from;
      for (;;) {
        const r = await alice.ok('GET', `/events?from=${enc(token)}&limit=2&timeout=0`);
        const page = r.chunk.filter((e: any) => e.event_id !== undefined).map((e: any) => e.event_id as string);
        if (r.chunk.length === 0) break;
        if (page.length > 0) pagesOverHttp.push(page);
        token = r.end;
      }
      token = from;
      for (;;) {
        // As a guest would: leaves her presence alone, so only the reads differ.
        const r = await roomByRoom.stream({ userId: alice.userId, deviceId: alice.user.deviceId, isGuest: true, from: token, limit: 2, timeoutMs: 0 });
        const page = r.chunk.filter((e) => e['event_id'] !== undefined).map((e) => e['event_id'] as string);
        if (r.chunk.length === 0) break;
        if (page.length > 0) pagesRoomByRoom.push(page);
        token = r.end;
      }
      assert.deepEqual(pagesRoomByRoom, pagesOverHttp);
      const all = pagesOverHttp.flat();
      const bodies: string[] = [];
      for (const id of all) {
        const e = await alice.ok('GET', `/events/${enc(id)}`);
        if (e.type === 'm.room.message') bodies.push(e.content.body);
      }
      assert.deepEqual(bodies, ['one', 'two', 'three']);
    });
  });
}
