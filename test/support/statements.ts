// Counting the statements a piece of work runs through a database handle (cost guards).

import type { Kysely } from 'kysely';
import type { Schema } from '../../src/storage/schema.js';

/** Counts the statements run through the database handle while `fn` runs. */
export async function statements(db: Kysely<Schema>, fn: () => Promise<unknown>): Promise<number> {
  const executor = db.getExecutor() as unknown as { executeQuery: (...args: unknown[]) => Promise<unknown> };
  const original = executor.executeQuery;
  let n = 0;
  executor.executeQuery = function (this: unknown, ...args: unknown[]) {
    n++;
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    executor.executeQuery = original;
  }
  return n;
}
