// Queries of the admin API over accounts: the paged user list, third-party identifiers,
// external identities, account types and rate-limit overrides.

import { sql, type Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface UserListFilter {
  readonly guests: boolean;
  readonly deactivated: boolean;
  /** Undefined: admins and others; true: admins only; false: others only. */
  readonly admins: boolean | undefined;
  /** A substring of the user ID. */
  readonly userId: string | undefined;
  /** A substring of the user ID or the display name. */
  readonly name: string | undefined;
}

export type UserListOrder = 'name' | 'is_guest' | 'admin' | 'user_type' | 'deactivated' | 'displayname' | 'avatar_url' | 'creation_ts';

export interface UserListRow {
  readonly user_id: string;
  readonly is_admin: number;
  readonly is_guest: number;
  readonly deactivated: number;
  readonly created_ts: number;
  readonly displayname: string | null;
  readonly avatar_url: string | null;
  readonly user_type: string | null;
  readonly appservice_id: string | null;
}

const ORDER_COLUMNS = {
  name: 'u.user_id',
  is_guest: 'u.is_guest',
  admin: 'u.is_admin',
  user_type: 't.user_type',
  deactivated: 'u.deactivated',
  displayname: 'p.displayname',
  avatar_url: 'p.avatar_url',
  creation_ts: 'u.created_ts',
} as const;

/** LIKE's wildcards taken literally. */
function likeContaining(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function filteredUsers(db: Kysely<Schema>, filter: UserListFilter) {
  let q = db
    .selectFrom('users as u')
    .leftJoin('profiles as p', 'p.user_id', 'u.user_id')
    .leftJoin('user_types as t', 't.user_id', 'u.user_id');
  if (!filter.guests) q = q.where('u.is_guest', '=', 0);
  if (!filter.deactivated) q = q.where('u.deactivated', '=', 0);
  if (filter.admins !== undefined) q = q.where('u.is_admin', '=', filter.admins ? 1 : 0);
  if (filter.userId !== undefined) q = q.where(sql<boolean>`u.user_id like ${likeContaining(filter.userId)} escape '\\'`);
  if (filter.name !== undefined) {
    const pattern = likeContaining(filter.name.toLowerCase());
    q = q.where((eb) => eb.or([eb(sql`lower(u.user_id)`, 'like', sql`${pattern} escape '\\'`), eb(sql`lower(p.displayname)`, 'like', sql`${pattern} escape '\\'`)]));
  }
  return q;
}

/** A page of users and how many match in all. */
export async function listUsersPage(
  db: Kysely<Schema>,
  filter: UserListFilter,
  order: UserListOrder,
  descending: boolean,
  from: number,
  limit: number,
): Promise<{ rows: UserListRow[]; total: number }> {
  const dir = descending ? 'desc' : 'asc';
  const rows = await filteredUsers(db, filter)
    .select(['u.user_id', 'u.is_admin', 'u.is_guest', 'u.deactivated', 'u.created_ts', 'u.appservice_id', 'p.displayname', 'p.avatar_url', 't.user_type'])
    .orderBy(ORDER_COLUMNS[order], dir)
    .orderBy('u.user_id', dir)
    .limit(limit)
    .offset(from)
    .execute();
  const count = await filteredUsers(db, filter).select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
  return {
    rows: rows.map((r) => ({ ...r, is_admin: Number(r.is_admin), is_guest: Number(r.is_guest), deactivated: Number(r.deactivated), created_ts: Number(r.created_ts) })),
    total: Number(count.n),
  };
}

export interface ThreepidRow {
  readonly medium: string;
  readonly address: string;
  readonly validated_at: number;
  readonly added_at: number;
}

export async function selectThreepids(db: Kysely<Schema>, userId: string): Promise<ThreepidRow[]> {
  const rows = await db.selectFrom('user_threepids').select(['medium', 'address', 'validated_at', 'added_at']).where('user_id', '=', userId).orderBy('medium').orderBy('address').execute();
  return rows.map((r) => ({ ...r, validated_at: Number(r.validated_at), added_at: Number(r.added_at) }));
}

/** The owner of a third-party identifier, if any. */
export async function threepidOwner(db: Kysely<Schema>, medium: string, address: string): Promise<string | undefined> {
  const row = await db.selectFrom('user_threepids').select('user_id').where('medium', '=', medium).where('address', '=', address).executeTakeFirst();
  return row?.user_id;
}

/** Replaces the user's identifiers with these (kept ones keep their times). */
export async function replaceThreepids(db: Kysely<Schema>, userId: string, threepids: readonly { medium: string; address: string }[], now: number): Promise<void> {
  const existing = await selectThreepids(db, userId);
  const key = (t: { medium: string; address: string }) => `${t.medium}\u0000${t.address}`;
  const wanted = new Set(threepids.map(key));
  for (const t of existing) {
    if (!wanted.has(key(t))) await db.deleteFrom('user_threepids').where('medium', '=', t.medium).where('address', '=', t.address).execute();
  }
  const have = new Set(existing.map(key));
  for (const t of threepids) {
    if (have.has(key(t))) continue;
    have.add(key(t));
    await db.insertInto('user_threepids').values({ user_id: userId, medium: t.medium, address: t.address, validated_at: now, added_at: now }).execute();
  }
}

export interface ExternalIdRow {
  readonly auth_provider: string;
  readonly external_id: string;
}

export async function selectExternalIds(db: Kysely<Schema>, userId: string): Promise<ExternalIdRow[]> {
  return db.selectFrom('user_external_ids').select(['auth_provider', 'external_id']).where('user_id', '=', userId).orderBy('auth_provider').orderBy('external_id').execute();
}

export async function externalIdOwner(db: Kysely<Schema>, authProvider: string, externalId: string): Promise<string | undefined> {
  const row = await db.selectFrom('user_external_ids').select('user_id').where('auth_provider', '=', authProvider).where('external_id', '=', externalId).executeTakeFirst();
  return row?.user_id;
}

export async function replaceExternalIds(db: Kysely<Schema>, userId: string, ids: readonly ExternalIdRow[]): Promise<void> {
  await db.deleteFrom('user_external_ids').where('user_id', '=', userId).execute();
  if (ids.length > 0) await db.insertInto('user_external_ids').values(ids.map((i) => ({ ...i, user_id: userId }))).execute();
}

/** Forgets the identifiers by which an account could be recovered or logged in to (deactivation). */
export async function deleteUserIdentifiers(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('user_threepids').where('user_id', '=', userId).execute();
  await db.deleteFrom('user_external_ids').where('user_id', '=', userId).execute();
}

export async function selectUserType(db: Kysely<Schema>, userId: string): Promise<string | null> {
  const row = await db.selectFrom('user_types').select('user_type').where('user_id', '=', userId).executeTakeFirst();
  return row?.user_type ?? null;
}

export async function setUserType(db: Kysely<Schema>, userId: string, userType: string | null): Promise<void> {
  if (userType === null) {
    await db.deleteFrom('user_types').where('user_id', '=', userId).execute();
    return;
  }
  await db
    .insertInto('user_types')
    .values({ user_id: userId, user_type: userType })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ user_type: userType }))
    .execute();
}

export interface RatelimitOverrideRow {
  readonly user_id: string;
  readonly messages_per_second: number;
  readonly burst_count: number;
}

export async function selectRatelimitOverrides(db: Kysely<Schema>): Promise<RatelimitOverrideRow[]> {
  const rows = await db.selectFrom('ratelimit_overrides').selectAll().execute();
  return rows.map((r) => ({ user_id: r.user_id, messages_per_second: Number(r.messages_per_second), burst_count: Number(r.burst_count) }));
}

export async function upsertRatelimitOverride(db: Kysely<Schema>, row: RatelimitOverrideRow): Promise<void> {
  await db
    .insertInto('ratelimit_overrides')
    .values(row)
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ messages_per_second: row.messages_per_second, burst_count: row.burst_count }))
    .execute();
}

export async function deleteRatelimitOverride(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('ratelimit_overrides').where('user_id', '=', userId).execute();
}
