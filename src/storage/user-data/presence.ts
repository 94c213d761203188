// Presence of local users: the current state per user, with the presence stream position of its
// last change.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export type PresenceState = 'online' | 'offline' | 'unavailable';

export interface PresenceRow {
  readonly userId: string;
  readonly state: PresenceState;
  readonly statusMsg: string | null;
  readonly lastActiveTs: number;
  readonly position: number;
}

export interface PresenceWithProfile extends PresenceRow {
  readonly displayname: string | null;
  readonly avatarUrl: string | null;
}

export async function selectPresence(db: Kysely<Schema>, userId: string): Promise<PresenceRow | undefined> {
  const r = await db.selectFrom('presence').selectAll().where('user_id', '=', userId).executeTakeFirst();
  return r && toRow(r);
}

export async function upsertPresence(db: Kysely<Schema>, row: PresenceRow): Promise<void> {
  const values = {
    state: row.state,
    status_msg: row.statusMsg,
    last_active_ts: row.lastActiveTs,
    stream_position: row.position,
  };
  await db
    .insertInto('presence')
    .values({ user_id: row.userId, ...values })
    .onConflict((oc) => oc.column('user_id').doUpdateSet(values))
    .execute();
}

const USER_BATCH = 500;

/** Presence rows with the user's display name and avatar. */
function withProfiles(db: Kysely<Schema>) {
  return db
    .selectFrom('presence')
    .leftJoin('profiles', 'profiles.user_id', 'presence.user_id')
    .select([
      'presence.user_id',
      'presence.state',
      'presence.status_msg',
      'presence.last_active_ts',
      'presence.stream_position',
      'profiles.displayname',
      'profiles.avatar_url',
    ]);
}

/**
 * Presence (with display name and avatar) of these users changed after `afterPosition`, or all of
 * it when `afterPosition` is 0.
 */
export async function selectPresenceSince(
  db: Kysely<Schema>,
  userIds: readonly string[],
  afterPosition: number,
): Promise<PresenceWithProfile[]> {
  const out: PresenceWithProfile[] = [];
  for (let i = 0; i < userIds.length; i += USER_BATCH) {
    const rows = await withProfiles(db)
      .where('presence.user_id', 'in', userIds.slice(i, i + USER_BATCH))
      .where('presence.stream_position', '>', afterPosition)
      .execute();
    for (const r of rows) out.push({ ...toRow(r), displayname: r.displayname, avatarUrl: r.avatar_url });
  }
  return out.sort((a, b) => a.position - b.position);
}

/** Presence (with profile) of everyone, changed in (after, upTo], in position order, at most `limit`. */
export async function selectPresenceAfter(db: Kysely<Schema>, after: number, upTo: number, limit: number): Promise<PresenceWithProfile[]> {
  const rows = await withProfiles(db)
    .where('presence.stream_position', '>', after)
    .where('presence.stream_position', '<=', upTo)
    .orderBy('presence.stream_position')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...toRow(r), displayname: r.displayname, avatarUrl: r.avatar_url }));
}

/** Users not offline, for the idle and offline timeouts. */
export async function selectPresentUsers(db: Kysely<Schema>): Promise<PresenceRow[]> {
  const rows = await db.selectFrom('presence').selectAll().where('state', '!=', 'offline').execute();
  return rows.map(toRow);
}

function toRow(r: {
  user_id: string;
  state: string;
  status_msg: string | null;
  last_active_ts: number;
  stream_position: number;
}): PresenceRow {
  return {
    userId: r.user_id,
    state: r.state as PresenceState,
    statusMsg: r.status_msg,
    lastActiveTs: Number(r.last_active_ts),
    position: Number(r.stream_position),
  };
}
