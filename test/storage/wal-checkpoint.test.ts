// SQLite's write-ahead log is checkpointed by side connections (src/storage/wal-checkpointer.ts):
// the main connection never checkpoints by itself, the log still starts over under steady writes,
// closing leaves no log behind, and a process killed while writing leaves a consistent database.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import { sql } from 'kysely';
import { openDatabase, sqlitePath } from '../../src/storage/database.js';
import { RESTART_AFTER_PAGES } from '../../src/storage/wal-checkpointer.js';
import { createSqliteDatabase, type TestDatabase } from '../support/databases.js';

interface Schema {
  t: { n: number; data: Buffer };
}

let target: TestDatabase;
before(async () => {
  target = await createSqliteDatabase();
});
after(() => target.drop());

/** The checkpoint sequence number in the log's header: it grows each time the log starts over. */
function logGeneration(walPath: string): number {
  const fd = openSync(walPath, 'r');
  try {
    const header = Buffer.alloc(16);
    return readSync(fd, header, 0, 16, 0) === 16 ? header.readUInt32BE(12) : -1;
  } finally {
    closeSync(fd);
  }
}

test('the log starts over under steady writes, without the main connection checkpointing', async () => {
  const database = openDatabase<Schema>({ connectionString: target.connectionString });
  const db = database.db;
  const walPath = `${sqlitePath(target.connectionString)}-wal`;
  const pageSize = Number((await sql<{ page_size: number }>`pragma page_size`.execute(db)).rows[0]!.page_size);
  const autocheckpoint = (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0]!;
  assert.equal(Object.values(autocheckpoint)[0], 0);
  await sql`create table t (n integer primary key, data blob not null)`.execute(db);

  // Write, a row per transaction with the event loop turning in between, until the log has started
  // over after outgrowing the bound (its header's generation grew); give up after writing ten
  // times the bound.
  const data = Buffer.alloc(3000, 1);
  const first = logGeneration(walPath);
  let n = 0;
  let largest = 0;
  while (logGeneration(walPath) === first || largest < RESTART_AFTER_PAGES * pageSize) {
    await db.insertInto('t').values({ n: ++n, data }).execute();
    if (n % 20 === 0) {
      largest = Math.max(largest, statSync(walPath).size);
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(n * data.length < 10 * RESTART_AFTER_PAGES * pageSize, 'the log never started over');
  }
  assert.equal(Number((await sql<{ c: number }>`select count(*) as c from t`.execute(db)).rows[0]!.c), n);

  await database.close();
  // The main connection closes last: it checkpoints what is left and removes the log.
  assert.equal(existsSync(walPath), false);
  const reopened = openDatabase<Schema>({ connectionString: target.connectionString });
  try {
    assert.equal(Number((await sql<{ c: number }>`select count(*) as c from t`.execute(reopened.db)).rows[0]!.c), n);
  } finally {
    await reopened.close();
  }
});

test('a process killed while writing leaves a consistent database with every reported row', async () => {
  const crash = await createSqliteDatabase();
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', new URL('../support/sqlite-writer-child.ts', import.meta.url).pathname, crash.connectionString], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    // Past the log's bound, so that checkpoints (and a start over) have happened before the kill.
    const pageSize = 4096;
    const enough = Math.ceil((1.5 * RESTART_AFTER_PAGES * pageSize) / 3000);
    const reported = await new Promise<number>((done, fail) => {
      let last = 0;
      child.stdout!.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') last = Number(line);
        if (last >= enough && child.exitCode === null) {
          child.kill('SIGKILL');
        }
      });
      child.once('exit', (code, signal) => (signal === 'SIGKILL' ? done(last) : fail(new Error(`the writer exited with ${code}`))));
    });
    const database = openDatabase<Schema>({ connectionString: crash.connectionString });
    try {
      const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(database.db);
      assert.deepEqual(check.rows.map((r) => Object.values(r)[0]), ['ok']);
      const count = Number((await sql<{ c: number }>`select count(*) as c from t`.execute(database.db)).rows[0]!.c);
      const highest = Number((await sql<{ m: number }>`select max(n) as m from t`.execute(database.db)).rows[0]!.m);
      // Every row the writer reported committed is there, without gaps.
      assert.ok(count >= reported, `${count} rows, ${reported} reported`);
      assert.equal(highest, count);
    } finally {
      await database.close();
    }
  } finally {
    await crash.drop();
  }
});
