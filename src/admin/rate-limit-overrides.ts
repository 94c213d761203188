// Per-user rate limits set through the admin API. The limiter asks on every limited request, so
// the overrides are held in memory (they are few), loaded at start and written through.

import type { Kysely } from 'kysely';
import type { Schema } from '../storage/schema.js';
import { deleteRatelimitOverride, selectRatelimitOverrides, upsertRatelimitOverride } from '../storage/accounts/admin-users.js';

export interface RateLimitOverride {
  readonly messagesPerSecond: number;
  readonly burstCount: number;
}

export class RateLimitOverrides {
  private constructor(
    private readonly db: Kysely<Schema>,
    private readonly byUser: Map<string, RateLimitOverride>,
  ) {}

  static async load(db: Kysely<Schema>): Promise<RateLimitOverrides> {
    const rows = await selectRatelimitOverrides(db);
    return new RateLimitOverrides(db, new Map(rows.map((r) => [r.user_id, { messagesPerSecond: r.messages_per_second, burstCount: r.burst_count }])));
  }

  get(userId: string): RateLimitOverride | undefined {
    return this.byUser.get(userId);
  }

  async set(userId: string, override: RateLimitOverride): Promise<void> {
    await upsertRatelimitOverride(this.db, { user_id: userId, messages_per_second: override.messagesPerSecond, burst_count: override.burstCount });
    this.byUser.set(userId, override);
  }

  async delete(userId: string): Promise<void> {
    await deleteRatelimitOverride(this.db, userId);
    this.byUser.delete(userId);
  }
}
