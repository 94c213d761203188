// The users whose data was erased on deactivation, held in memory: they are few, and every
// served batch of events asks about its senders, so asking must cost no read.

import type { Kysely } from 'kysely';
import { erasedUserIds } from '../storage/accounts/erased-users.js';
import type { Schema } from '../storage/schema.js';

/** What serving events reads: whether a sender's data was erased. */
export interface ErasedSenders {
  readonly size: number;
  has(userId: string): boolean;
}

export class ErasedUsers implements ErasedSenders {
  private readonly ids: Set<string>;

  constructor(ids: Iterable<string> = []) {
    this.ids = new Set(ids);
  }

  /** The users marked erased in the database. */
  static async load(db: Kysely<Schema>): Promise<ErasedUsers> {
    return new ErasedUsers(await erasedUserIds(db));
  }

  get size(): number {
    return this.ids.size;
  }

  has(userId: string): boolean {
    return this.ids.has(userId);
  }

  /** Records a user whose erased mark is stored. */
  add(userId: string): void {
    this.ids.add(userId);
  }
}

export const noneErased: ErasedSenders = { size: 0, has: () => false };
