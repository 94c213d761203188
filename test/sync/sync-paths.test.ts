// An incremental sync reads the events since its token once for every sync covering the same
// range (the shared window), and falls back to reads of its own when the range is too long. Both
// ways must answer the same: a second sync service over the same server, never using the window,
// is asked the same questions as the server's own along a scenario, on SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceListTracker } from '../../src/sync/device-lists.js';
import { SyncService, type SyncRequest } from '../../src/sync/sync-service.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, enc } from './sync-client.js';

/** The response without what differs between two calls a moment apart (event ages). */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'age' || k === 'last_active_ago') continue;
    out[k] = normalize(v);
  }
  return out;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`sync with and without the shared window on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let own: SyncService;
    before(async () => {
      const s = hs.server.services;
      own = new SyncService({
        db: hs.server.core.db,
        notifier: hs.server.core.notifier,
        rooms: s.rooms.reader,
        accountData: s.accountData,
        filters: s.filters,
        typing: s.typing,
        receipts: s.receipts,
        toDevice: s.toDevice,
        presence: s.presence,
        deviceKeys: s.deviceKeys,
        deviceLists: new DeviceListTracker({ db: hs.server.core.db, reader: s.rooms.reader, notifier: hs.server.core.notifier }),
        windowMaxEvents: 0,
      });
    });

    test('the same answers along a scenario of joins, messages, state, receipts, invites and leaves', async () => {
      const alice = new Client(hs, await hs.registerUser('alice', 'secret'));
      const bob = new Client(hs, await hs.registerUser('bob', 'secret'));
      const carol = new Client(hs, await hs.registerUser('carol', 'secret'));
      const shared = hs.server.services.sync;
      const filters = [undefined, JSON.stringify({ room: { timeline: { limit: 2 }, state: { lazy_load_members: true } } })];
      const tokens = new Map<string | undefined, string | undefined>(filters.map((f) => [f, undefined]));

      /** Bob's sync from his last token through both services; they must agree. Returns the response. */
      const check = async (what: string) => {
        let last: any;
        for (const filter of filters) {
          const since = tokens.get(filter);
          const req: SyncRequest = {
            userId: bob.userId,
            deviceId: bob.user.deviceId,
            setPresence: 'offline',
            ...(since !== undefined ? { since } : {}),
            ...(filter !== undefined ? { filter } : {}),
          };
          const fallback = await own.sync(req);
          const windowed = await shared.sync(req);
          assert.deepEqual(normalize(windowed), normalize(fallback), `${what} (filter ${filter ?? 'none'})`);
          tokens.set(filter, windowed.next_batch);
          last = windowed;
        }
        return last;
      };

      const room = await alice.createRoom({ preset: 'public_chat', name: 'Paths' });
      const other = await carol.createRoom({ preset: 'public_chat' });
      await check('initial');
      await bob.join(room);
      assert.ok((await check('joined')).rooms.join[room]);
      const sent = [];
      for (let i = 0; i < 4; i++) sent.push(await alice.text(room, `p${i}`));
      await check('messages');
      await alice.ok('PUT', `/rooms/${enc(room)}/state/m.room.topic/`, { topic: 'gap' });
      for (let i = 0; i < 5; i++) await carol.text(other, `elsewhere ${i}`);
      await carol.join(room);
      for (let i = 0; i < 4; i++) await carol.text(room, `c${i}`);
      assert.equal((await check('a limited gap')).rooms.join[room].timeline.limited, true);
      await bob.ok('POST', `/rooms/${enc(room)}/receipt/m.read/${enc(sent[3]!)}`, {});
      await carol.invite(other, bob.userId);
      assert.ok((await check('receipt and invite')).rooms.invite[other]);
      await bob.join(other);
      await bob.leave(room);
      const last = await check('join one, leave the other');
      assert.ok(last.rooms.leave[room]);
      assert.ok(last.rooms.join[other]);
      await check('nothing new');
    });
  });
}
