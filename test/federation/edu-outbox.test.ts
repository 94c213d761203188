// The durable EDU queue (federation/edu-outbox.ts) on SQLite and PostgreSQL, with a stand-in for the
// federation client: EDUs queued in a transaction are sent only once it commits; a destination that
// fails is retried with the same transaction id until it accepts; what a stopped queue held is
// sent by the next one started on the same database (a restart); a 400 drops the batch; one
// destination's failures do not hold up another's.

import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FederationRequest, FederationResponse } from '../../src/federation/client.js';
import { EduOutbox } from '../../src/federation/edu-outbox.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const quiet = { warn: () => {} };
const RETRY = { minMs: 20, maxMs: 100 };

/** A federation client whose answer per destination the test sets; records every transaction. */
class StubClient {
  readonly sent: { destination: string; txnId: string; status: number; edus: { edu_type: string; content: any }[] }[] = [];
  readonly status = new Map<string, number>();

  async request(req: FederationRequest): Promise<FederationResponse> {
    const txnId = req.path.slice('/federation/v1/send/'.length);
    const status = this.status.get(req.destination) ?? 200;
    this.sent.push({ destination: req.destination, txnId, status, edus: (req.body as any).edus });
    if (status === 0) throw new Error(`${req.destination}: no route`);
    return { status, headers: {}, body: status === 200 ? { pdus: {} } : { errcode: 'M_UNKNOWN' } } as unknown as FederationResponse;
  }

  /** The contents of the EDUs the destination accepted. */
  delivered(destination: string): any[] {
    return this.sent.filter((t) => t.destination === destination && t.status === 200).flatMap((t) => t.edus.map((e) => e.content));
  }
}

for (const backend of await storageBackends()) {
  describe(`the EDU outbox on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    let client: StubClient;
    const outboxes: EduOutbox[] = [];
    const outbox = () => {
      const o = new EduOutbox({ db: database.db, serverName: 'here.test', client, log: quiet, retry: RETRY });
      outboxes.push(o);
      return o;
    };
    const queued = async () => (await database.db.selectFrom('federation_outbound_edus').select(['destination']).orderBy('edu_id').execute()).map((r) => r.destination);

    before(async () => {
      target = await backend.create();
      database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 2 });
      await migrateToLatest(database.db as never, database.dialect);
    });
    beforeEach(async () => {
      client = new StubClient();
      await database.db.deleteFrom('federation_outbound_edus').execute();
    });
    after(async () => {
      for (const o of outboxes) await o.stop();
      await database.close();
      await target.drop();
    });

    test('queued in a transaction that rolls back, nothing is sent; committed, it is, and leaves the queue', async () => {
      const o = outbox();
      await database.db
        .transaction()
        .execute(async (trx) => {
          await o.queue(trx, ['there.test'], 'm.direct_to_device', { n: 0 });
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      await database.db.transaction().execute((trx) => o.queue(trx, ['there.test', 'here.test'], 'm.direct_to_device', { n: 1 }));
      // This server is never a destination.
      assert.deepEqual(await queued(), ['there.test']);
      o.send(['there.test']);
      await eventually(async () => (await queued()).length === 0, 'the queue drains');
      assert.deepEqual(client.delivered('there.test'), [{ n: 1 }]);
      await o.stop();
    });

    test('a failing destination is retried with the same transaction id; after a restart the next queue sends it', async () => {
      client.status.set('down.test', 0);
      const first = outbox();
      await database.db.transaction().execute(async (trx) => {
        await first.queue(trx, ['down.test'], 'm.device_list_update', { n: 1 });
        await first.queue(trx, ['down.test', 'up.test'], 'm.direct_to_device', { n: 2 });
      });
      first.send(['down.test', 'up.test']);
      await eventually(() => client.sent.filter((t) => t.destination === 'down.test').length >= 3, 'three attempts');
      await eventually(() => client.delivered('up.test').length === 1, 'the other destination is not held up');
      const ids = new Set(client.sent.filter((t) => t.destination === 'down.test').map((t) => t.txnId));
      assert.equal(ids.size, 1, [...ids].join(', '));
      await first.stop();
      assert.deepEqual(await queued(), ['down.test', 'down.test']);

      // The "restart": a new queue on the same database, the destination back.
      client.status.set('down.test', 200);
      const second = outbox();
      await second.start();
      await eventually(async () => (await queued()).length === 0, 'the queue drains after the restart');
      const last = client.sent[client.sent.length - 1]!;
      assert.equal(last.txnId, [...ids][0]);
      assert.deepEqual(last.edus, [
        { edu_type: 'm.device_list_update', content: { n: 1 } },
        { edu_type: 'm.direct_to_device', content: { n: 2 } },
      ]);
      await second.stop();
    });

    test('a destination that contacts us is tried again at once; a 400 drops the batch', async () => {
      const o = new EduOutbox({ db: database.db, serverName: 'here.test', client, log: quiet, retry: { minMs: 60_000, maxMs: 60_000 } });
      outboxes.push(o);
      client.status.set('slow.test', 0);
      await database.db.transaction().execute((trx) => o.queue(trx, ['slow.test'], 'm.direct_to_device', { n: 1 }));
      o.send(['slow.test']);
      await eventually(() => client.sent.length === 1, 'the first attempt');
      client.status.set('slow.test', 200);
      // A new EDU does not cut the pause short; the destination contacting us does.
      await database.db.transaction().execute((trx) => o.queue(trx, ['slow.test'], 'm.direct_to_device', { n: 2 }));
      o.send(['slow.test']);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(client.sent.length, 1);
      o.contacted('slow.test');
      await eventually(async () => (await queued()).length === 0, 'sent once contacted');
      assert.deepEqual(client.delivered('slow.test'), [{ n: 1 }, { n: 2 }]);

      client.status.set('picky.test', 400);
      await database.db.transaction().execute((trx) => o.queue(trx, ['picky.test'], 'm.direct_to_device', { n: 3 }));
      o.send(['picky.test']);
      await eventually(async () => (await queued()).length === 0, 'the refused batch is dropped');
      assert.equal(client.sent.filter((t) => t.destination === 'picky.test').length, 1);
      await o.stop();
    });
  });
}
