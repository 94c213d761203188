// The durable stream consumer on SQLite and PostgreSQL, over a real stream: to-device messages,
// each written in its own transaction with a position allocated there and notified after commit,
// as the to-device service does. Rows are one message per position; each test reads one device.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { allocateStreamPosition } from '../../src/storage/streams.js';
import { insertToDeviceMessages, selectToDevice, type DeliveredToDevice } from '../../src/storage/user-data/to-device.js';
import type { StreamBus } from '../../src/streams/bus.js';
import { StreamConsumer, type StreamConsumerOptions } from '../../src/streams/consumer.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { storageBackends, type TestDatabase } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const ALICE = '@alice:hs';

/** Writes one message for the device per position, as concurrent transactions; returns the positions. */
async function write(database: Database<Schema>, bus: StreamBus, deviceId: string, count: number): Promise<number[]> {
  const positions = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const position = await database.db.transaction().execute(async (trx) => {
        const p = await allocateStreamPosition(trx, 'to_device');
        await insertToDeviceMessages(trx, [{ userId: ALICE, deviceId, sender: '@bob:hs', type: 'm.test', content: { i } }], p);
        return p;
      });
      bus.notify({ stream: 'to_device', position, userIds: [ALICE] });
      return position;
    }),
  );
  return positions.sort((a, b) => a - b);
}

interface Warning {
  readonly message: string;
  readonly details: Record<string, unknown>;
}

function consumerOf(
  database: Database<Schema>,
  bus: StreamBus,
  deviceId: string,
  handle: (rows: readonly DeliveredToDevice[]) => Promise<void>,
  extra: Partial<StreamConsumerOptions<DeliveredToDevice>> & { warnings?: Warning[] } = {},
): StreamConsumer<DeliveredToDevice> {
  const warnings = extra.warnings ?? [];
  return new StreamConsumer<DeliveredToDevice>({
    name: `test-${deviceId}`,
    stream: 'to_device',
    db: database.db,
    bus,
    read: (after, limit) => selectToDevice(database.db, ALICE, deviceId, after, Number.MAX_SAFE_INTEGER, limit),
    handle,
    batchSize: 2,
    retry: { minMs: 1, maxMs: 4 },
    log: { warn: (message, details = {}) => void warnings.push({ message, details: details as Record<string, unknown> }) },
    ...extra,
  });
}

function open(target: TestDatabase): Database<Schema> {
  return openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
}

for (const backend of await storageBackends()) {
  describe(`stream consumer on ${backend.name}`, { skip: backend.skip }, () => {
    let target: TestDatabase;
    let database: Database<Schema>;
    before(async () => {
      target = await backend.create();
      database = open(target);
      await migrateToLatest(database.db as never, database.dialect);
    });
    after(async () => {
      await database.close();
      await target.drop();
    });

    test('catches up from the database on start, and after a restart from its stored position', async () => {
      let bus = new InProcessBus();
      const first = await write(database, bus, 'RESTART', 5);
      const seenByFirst: number[][] = [];
      const a = consumerOf(database, bus, 'RESTART', async (rows) => void seenByFirst.push(rows.map((r) => r.position)));
      await a.start();
      await eventually(() => a.position === first.at(-1) && a.idle, 'first instance caught up');
      await a.stop();
      assert.deepEqual(seenByFirst, [first.slice(0, 2), first.slice(2, 4), first.slice(4)]);

      // Rows written while no consumer runs, then the process restarts: a new connection pool,
      // a new bus, a new consumer of the same name.
      const later = await write(database, bus, 'RESTART', 3);
      await database.close();
      database = open(target);
      bus = new InProcessBus();
      const seenBySecond: number[] = [];
      const b = consumerOf(database, bus, 'RESTART', async (rows) => void seenBySecond.push(...rows.map((r) => r.position)));
      await b.start();
      await eventually(() => b.position === later.at(-1) && b.idle, 'second instance caught up');
      await b.stop();
      assert.deepEqual(seenBySecond, later);
      const stored = await database.db.selectFrom('stream_consumers').selectAll().where('name', '=', 'test-RESTART').executeTakeFirstOrThrow();
      assert.deepEqual([stored.stream, Number(stored.position)], ['to_device', later.at(-1)]);
    });

    test('a new consumer starts after startAfter; a name recorded for another stream is refused', async () => {
      const bus = new InProcessBus();
      const old = await write(database, bus, 'FRESH', 3);
      const seen: number[] = [];
      const c = consumerOf(database, bus, 'FRESH', async (rows) => void seen.push(...rows.map((r) => r.position)), { startAfter: old[1] });
      await c.start();
      await eventually(() => c.position === old[2] && c.idle, 'caught up');
      await c.stop();
      assert.deepEqual(seen, [old[2]]);
      const wrong = consumerOf(database, bus, 'FRESH', async () => {}, { stream: 'receipts' });
      await assert.rejects(wrong.start(), /recorded for stream to_device/);
      await wrong.stop();
    });

    test('wakes on a notification of its stream and reads what was committed', async () => {
      const bus = new InProcessBus();
      const seen: number[] = [];
      const c = consumerOf(database, bus, 'WAKE', async (rows) => void seen.push(...rows.map((r) => r.position)));
      await c.start();
      await eventually(() => c.idle, 'idle with nothing to read');
      const one = await write(database, bus, 'WAKE', 1);
      await eventually(() => seen.length === 1, 'woken by the notification');
      assert.deepEqual(seen, one);
      const more = await write(database, bus, 'WAKE', 7);
      await eventually(() => c.position === more.at(-1) && c.idle, 'woken again');
      await c.stop();
      assert.deepEqual(seen, [...one, ...more]);
    });

    test('a failing batch is logged and retried, without moving past it', async () => {
      const bus = new InProcessBus();
      const written = await write(database, bus, 'RETRY', 6);
      const attempts: number[][] = [];
      const storedAtFailure: number[] = [];
      const warnings: Warning[] = [];
      let failuresLeft = 2;
      const c = consumerOf(
        database,
        bus,
        'RETRY',
        async (rows) => {
          attempts.push(rows.map((r) => r.position));
          if (rows[0]!.position === written[2] && failuresLeft > 0) {
            failuresLeft--;
            storedAtFailure.push(c.position);
            throw new Error('gateway unreachable');
          }
        },
        { warnings },
      );
      await c.start();
      await eventually(() => c.position === written.at(-1) && c.idle, 'caught up after the retries');
      await c.stop();
      const second = written.slice(2, 4);
      assert.deepEqual(attempts, [written.slice(0, 2), second, second, second, written.slice(4)]);
      assert.deepEqual(storedAtFailure, [written[1], written[1]]);
      assert.deepEqual(
        warnings.map((w) => [w.details['consumer'], w.details['position'], w.details['attempt'], w.details['error']]),
        [
          ['test-RETRY', written[1], 1, 'Error: gateway unreachable'],
          ['test-RETRY', written[1], 2, 'Error: gateway unreachable'],
        ],
      );
    });

    test('every row at least once and in order, with concurrent writers and a restart midway', async () => {
      const bus = new InProcessBus();
      const runs: number[][] = [[], []];
      const make = (run: number) => consumerOf(database, bus, 'ORDER', async (rows) => void runs[run]!.push(...rows.map((r) => r.position)), { batchSize: 3 });
      const first = make(0);
      await first.start();
      const written = [...(await write(database, bus, 'ORDER', 10)), ...(await write(database, bus, 'ORDER', 10))];
      await first.stop();
      const second = make(1);
      const writing = write(database, bus, 'ORDER', 20);
      await second.start();
      written.push(...(await writing));
      await eventually(() => second.position === Math.max(...written) && second.idle, 'second run caught up');
      await second.stop();
      for (const run of runs) assert.deepEqual(run, [...run].sort((a, b) => a - b), 'ascending within a run');
      assert.ok(runs[0]!.every((p) => p <= first.position), 'the first run stored what it handled');
      assert.ok(runs[1]!.every((p) => p > first.position), 'the second run reads on after it');
      assert.deepEqual([...new Set([...runs[0]!, ...runs[1]!])].sort((a, b) => a - b), written.sort((a, b) => a - b));
    });

    test('stop waits for the batch in flight and stores its position', async () => {
      const bus = new InProcessBus();
      const written = await write(database, bus, 'STOP', 1);
      let entered = false;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const c = consumerOf(database, bus, 'STOP', async () => {
        entered = true;
        await gate;
      });
      await c.start();
      await eventually(() => entered, 'handler entered');
      let stopped = false;
      const stopping = c.stop().then(() => (stopped = true));
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.equal(stopped, false);
      release();
      await stopping;
      assert.equal(c.position, written[0]);
      const stored = await database.db.selectFrom('stream_consumers').select('position').where('name', '=', 'test-STOP').executeTakeFirstOrThrow();
      assert.equal(Number(stored.position), written[0]);
    });
  });
}
