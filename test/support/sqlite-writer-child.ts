// A process that writes into a SQLite database through openDatabase until it is killed: one row
// per transaction, a line `<rows committed>` on stdout after every 100. For tests of what a crash
// leaves behind.
//
//   node --import tsx test/support/sqlite-writer-child.ts <connection string>

import { sql } from 'kysely';
import { openDatabase } from '../../src/storage/database.js';

const database = openDatabase<{ t: { n: number; data: Buffer } }>({ connectionString: process.argv[2]! });
await sql`create table if not exists t (n integer primary key, data blob not null)`.execute(database.db);
const data = Buffer.alloc(3000, 7);
for (let n = 1; ; n++) {
  await database.db.insertInto('t').values({ n, data }).execute();
  if (n % 100 === 0) process.stdout.write(`${n}\n`);
  // A turn of the event loop now and then, so the checkpointer's fsyncs and timer get their turn.
  if (n % 20 === 0) await new Promise((r) => setImmediate(r));
}
