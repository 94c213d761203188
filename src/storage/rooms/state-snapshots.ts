// Room state as deltas. A snapshot stores only the entries that changed against its parent, a
// full snapshot (the base) every entry. Each snapshot row carries its ancestors (full base first),
// so a read is two queries whatever the chain's length.
//
// Which parent a new snapshot takes (planSnapshot) keeps both the rows written per state event
// and the chain short in rooms of any size. The deltas on top of a base shrink geometrically:
// each at least twice the size of the next. A new delta first absorbs the newest deltas that are
// not twice its size (it then holds their keys as well, with their current events, and takes
// their parent), like the carry of a binary counter. So a change is rewritten about once per
// doubling, O(log n) rows per state event, and a chain holds O(log n) deltas. A delta that would
// sit on the base and hold more than a quarter of it is written as a new full base instead: a
// base of N rows comes after at least N/4 changes, 4 rows per state event amortised.

import type { Kysely } from 'kysely';
import { parseStateKey, stateKey, type StateKey } from '../../protocol/events.js';
import type { Schema } from '../schema.js';

/** Snapshots allowed on top of a full snapshot: a bound that the policy below rarely reaches. */
export const STATE_CHAIN_LIMIT = 32;
/** A delta absorbs its parent while the parent holds fewer than this many times its entries. */
const DELTA_RATIO = 2;
/**
 * Below this many entries a delta is not replaced by a base for holding a quarter of it (small
 * rooms keep cheap deltas), only for holding as many entries as the whole state.
 */
const MIN_REBASE_ENTRIES = 64;

export interface SnapshotInfo {
  readonly nid: number;
  /** Deltas between this snapshot and its full base (0 for a full snapshot). */
  readonly chainLength: number;
  /** Snapshot nids to read, full base first, this one last. */
  readonly chain: readonly number[];
}

/** One entry of a snapshot: a state key's nid and its event's nid (null removes the key). */
export type SnapshotEntry = readonly [stateKeyNid: number, eventNid: number | null];

/** A snapshot as the policy sees it: its parent (null for a base) and the keys it has entries for. */
export interface ChainLink<K> {
  readonly parent: this | null;
  readonly keys: readonly K[];
  readonly chainLength: number;
}

/**
 * The form of the snapshot to write after `changed` keys changed on top of `current` (null: the
 * room has no state yet), `stateSize` keys in all: a full snapshot (parent null), or a delta on
 * top of `parent` with entries for `keys` (the changed keys and those of the deltas it absorbs),
 * each holding its key's current event.
 */
export function planSnapshot<K, L extends ChainLink<K>>(
  current: L | null,
  changed: readonly K[],
  stateSize: number,
): { readonly parent: null } | { readonly parent: L; readonly keys: readonly K[] } {
  if (current === null) return { parent: null };
  const keys = new Set(changed);
  let parent: L = current;
  while (parent.parent !== null && parent.keys.length < DELTA_RATIO * keys.size) {
    for (const k of parent.keys) keys.add(k);
    parent = parent.parent;
  }
  const onBase = parent.parent === null;
  const baseOutgrown = onBase && ((keys.size > MIN_REBASE_ENTRIES && 4 * keys.size > parent.keys.length) || keys.size >= stateSize);
  if (baseOutgrown || parent.chainLength + 1 > STATE_CHAIN_LIMIT) return { parent: null };
  return { parent, keys: [...keys] };
}

/**
 * Writes a snapshot's row: a delta on top of `parent`, or a full snapshot when `parent` is null
 * (see planSnapshot). Its entries follow with insertSnapshotEntries, once the events they
 * name have rows.
 */
export async function insertSnapshotRow(
  trx: Kysely<Schema>,
  roomNid: number,
  parent: SnapshotInfo | null,
): Promise<SnapshotInfo> {
  const chainLength = parent === null ? 0 : parent.chainLength + 1;
  const ancestors = parent === null ? [] : parent.chain;
  const row = await trx
    .insertInto('state_snapshots')
    .values({ room_nid: roomNid, parent_nid: parent?.nid ?? null, chain_length: chainLength, chain: JSON.stringify(ancestors) })
    .returning('snapshot_nid')
    .executeTakeFirstOrThrow();
  const nid = Number(row.snapshot_nid);
  return { nid, chainLength, chain: [...ancestors, nid] };
}

const ENTRY_ROWS_PER_INSERT = 500;

/** A snapshot's entries: the changed ones for a delta, every one for a full snapshot. */
export async function insertSnapshotEntries(
  trx: Kysely<Schema>,
  snapshotNid: number,
  entries: readonly SnapshotEntry[],
): Promise<void> {
  for (let i = 0; i < entries.length; i += ENTRY_ROWS_PER_INSERT) {
    const rows = entries
      .slice(i, i + ENTRY_ROWS_PER_INSERT)
      .map(([stateKeyNid, eventNid]) => ({ snapshot_nid: snapshotNid, state_key_nid: stateKeyNid, event_nid: eventNid }));
    await trx.insertInto('state_snapshot_entries').values(rows).execute();
  }
}

export async function getSnapshotInfo(db: Kysely<Schema>, snapshotNid: number): Promise<SnapshotInfo | undefined> {
  const row = await db
    .selectFrom('state_snapshots')
    .select(['snapshot_nid', 'chain_length', 'chain'])
    .where('snapshot_nid', '=', snapshotNid)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const nid = Number(row.snapshot_nid);
  return { nid, chainLength: row.chain_length, chain: [...(JSON.parse(row.chain) as number[]), nid] };
}

export interface SnapshotState {
  readonly info: SnapshotInfo;
  /** stateKey(type, state_key) → event nid. */
  readonly events: Map<StateKey, number>;
  /** stateKey(type, state_key) → that pair's state_key_nid. */
  readonly keyNids: Map<StateKey, number>;
  /** The keys each snapshot of the chain has entries for, full base first (what planSnapshot weighs). */
  readonly layers: StateKey[][];
}

/** The state a snapshot holds: stateKey(type, state_key) → event nid. */
export async function readSnapshot(db: Kysely<Schema>, snapshotNid: number): Promise<Map<StateKey, number>> {
  return (await readSnapshotState(db, snapshotNid)).events;
}

/** The state a snapshot holds, with the state keys' nids. */
export async function readSnapshotState(db: Kysely<Schema>, snapshotNid: number): Promise<SnapshotState> {
  const info = await getSnapshotInfo(db, snapshotNid);
  if (info === undefined) throw new Error(`state snapshot ${snapshotNid} does not exist`);
  const rows = await db
    .selectFrom('state_snapshot_entries as e')
    .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
    .select(['e.snapshot_nid', 'e.state_key_nid', 'k.event_type', 'k.state_key', 'e.event_nid'])
    .where('e.snapshot_nid', 'in', info.chain)
    .execute();
  const events = new Map<StateKey, number>();
  const keyNids = new Map<StateKey, number>();
  const layers: StateKey[][] = info.chain.map(() => []);
  // Later snapshots in the chain override earlier ones: rows are applied layer by layer.
  const byLayer = inChainOrder(info.chain, rows);
  byLayer.forEach((layerRows, i) => {
    const layer = layers[i]!;
    for (const r of layerRows) {
      const key = stateKey(r.event_type, r.state_key);
      keyNids.set(key, Number(r.state_key_nid));
      layer.push(key);
      if (r.event_nid === null) events.delete(key);
      else events.set(key, Number(r.event_nid));
    }
  });
  return { info, events, keyNids, layers };
}

/** A chain's entry rows grouped by snapshot, in the chain's order (full base first). */
function inChainOrder<R extends { snapshot_nid: number | bigint }>(chain: readonly number[], rows: readonly R[]): R[][] {
  const rank = new Map(chain.map((nid, i) => [nid, i]));
  const out: R[][] = chain.map(() => []);
  for (const r of rows) out[rank.get(Number(r.snapshot_nid))!]!.push(r);
  return out;
}

/** A state entry with its event's id beside its nid. */
export interface SnapshotEvent {
  readonly nid: number;
  readonly eventId: string;
}

export interface SnapshotStates {
  /** Per snapshot asked for: stateKey(type, state_key) → its event. */
  readonly states: Map<number, { readonly info: SnapshotInfo; readonly events: ReadonlyMap<StateKey, SnapshotEvent> }>;
  /** stateKey(type, state_key) → that pair's state_key_nid, for every key read. */
  readonly keyNids: Map<StateKey, number>;
}

/**
 * The states several snapshots hold, with their events' ids. Snapshots of one room mostly share
 * their full base, so the rows of every chain involved are read once, in one query, and each
 * base is folded once.
 */
export async function readSnapshotStates(db: Kysely<Schema>, snapshotNids: readonly number[]): Promise<SnapshotStates> {
  const wanted = [...new Set(snapshotNids)];
  const infos = new Map<number, SnapshotInfo>();
  if (wanted.length > 0) {
    const rows = await db.selectFrom('state_snapshots').select(['snapshot_nid', 'chain_length', 'chain']).where('snapshot_nid', 'in', wanted).execute();
    for (const r of rows) {
      const nid = Number(r.snapshot_nid);
      infos.set(nid, { nid, chainLength: r.chain_length, chain: [...(JSON.parse(r.chain) as number[]), nid] });
    }
  }
  for (const nid of wanted) if (!infos.has(nid)) throw new Error(`state snapshot ${nid} does not exist`);
  // Full bases are folded as their rows come; the deltas above them are kept to apply in order.
  const bases = new Map<number, Map<StateKey, SnapshotEvent>>();
  const deltas = new Map<number, [StateKey, SnapshotEvent | null][]>();
  for (const info of infos.values()) {
    bases.set(info.chain[0]!, new Map());
    for (const nid of info.chain.slice(1)) deltas.set(nid, []);
  }
  const keyNids = new Map<StateKey, number>();
  const chainNids = [...bases.keys(), ...deltas.keys()];
  const rows =
    chainNids.length === 0
      ? []
      : await db
          .selectFrom('state_snapshot_entries as e')
          .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
          .leftJoin('events as ev', 'ev.event_nid', 'e.event_nid')
          .select(['e.snapshot_nid', 'e.state_key_nid', 'k.event_type', 'k.state_key', 'e.event_nid', 'ev.event_id'])
          .where('e.snapshot_nid', 'in', chainNids)
          .execute();
  for (const r of rows) {
    const key = stateKey(r.event_type, r.state_key);
    keyNids.set(key, Number(r.state_key_nid));
    let event: SnapshotEvent | null = null;
    if (r.event_nid !== null) {
      if (r.event_id === null) throw new Error(`state snapshot ${r.snapshot_nid} names event ${r.event_nid}, which is not stored`);
      event = { nid: Number(r.event_nid), eventId: r.event_id };
    }
    const snapshot = Number(r.snapshot_nid);
    const base = bases.get(snapshot);
    if (base === undefined) deltas.get(snapshot)!.push([key, event]);
    else if (event === null) base.delete(key);
    else base.set(key, event);
  }
  const states: SnapshotStates['states'] = new Map();
  for (const info of infos.values()) {
    const base = bases.get(info.chain[0]!)!;
    if (info.chain.length === 1) {
      states.set(info.nid, { info, events: base });
      continue;
    }
    // Later snapshots in the chain override earlier ones.
    const events = new Map(base);
    for (const nid of info.chain.slice(1)) {
      for (const [key, event] of deltas.get(nid)!) {
        if (event === null) events.delete(key);
        else events.set(key, event);
      }
    }
    states.set(info.nid, { info, events });
  }
  return { states, keyNids };
}

/** Rows a snapshot's chain holds in total (for tests and diagnostics). */
export async function snapshotRowCount(db: Kysely<Schema>, roomNid: number): Promise<{ snapshots: number; entries: number }> {
  const s = await db
    .selectFrom('state_snapshots')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('room_nid', '=', roomNid)
    .executeTakeFirstOrThrow();
  const e = await db
    .selectFrom('state_snapshot_entries as e')
    .innerJoin('state_snapshots as s', 's.snapshot_nid', 'e.snapshot_nid')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('s.room_nid', '=', roomNid)
    .executeTakeFirstOrThrow();
  return { snapshots: Number(s.n), entries: Number(e.n) };
}

/**
 * Integer ids for (type, state_key) pairs. Ids never change once given, so they are cached for
 * the life of the process.
 */
/** Pairs per statement when resolving many: four parameters each, far below both backends' limits. */
const KEYS_PER_STATEMENT = 1000;

export class StateKeyNids {
  private readonly byKey = new Map<StateKey, number>();

  cached(key: StateKey): number | undefined {
    return this.byKey.get(key);
  }

  /** Records ids read from the database. */
  remember(ids: ReadonlyMap<StateKey, number>): void {
    for (const [k, nid] of ids) this.byKey.set(k, nid);
  }

  /** The pair's id, created when new (inside the caller's transaction). */
  async getOrCreate(trx: Kysely<Schema>, type: string, key: string): Promise<number> {
    const k = stateKey(type, key);
    const known = this.byKey.get(k);
    if (known !== undefined) return known;
    const inserted = await trx
      .insertInto('event_state_keys')
      .values({ event_type: type, state_key: key })
      .onConflict((oc) => oc.columns(['event_type', 'state_key']).doNothing())
      .returning('state_key_nid')
      .executeTakeFirst();
    let nid = inserted?.state_key_nid;
    if (nid === undefined) {
      const row = await trx
        .selectFrom('event_state_keys')
        .select('state_key_nid')
        .where('event_type', '=', type)
        .where('state_key', '=', key)
        .executeTakeFirstOrThrow();
      nid = row.state_key_nid;
    }
    this.byKey.set(k, Number(nid));
    return Number(nid);
  }

  /**
   * Makes the ids of these pairs known (`cached` answers them after), creating those that are new
   * inside the caller's transaction: a statement or two for all of them rather than per pair.
   */
  async resolve(trx: Kysely<Schema>, keys: Iterable<StateKey>): Promise<void> {
    const missing = [...new Set(keys)].filter((k) => !this.byKey.has(k));
    for (let i = 0; i < missing.length; i += KEYS_PER_STATEMENT) {
      const part = missing.slice(i, i + KEYS_PER_STATEMENT).map(parseStateKey);
      const inserted = await trx
        .insertInto('event_state_keys')
        .values(part.map((p) => ({ event_type: p.type, state_key: p.stateKey })))
        .onConflict((oc) => oc.columns(['event_type', 'state_key']).doNothing())
        .returning(['state_key_nid', 'event_type', 'state_key'])
        .execute();
      for (const r of inserted) this.byKey.set(stateKey(r.event_type, r.state_key), Number(r.state_key_nid));
      // Those another writer created first.
      const rest = part.filter((p) => !this.byKey.has(stateKey(p.type, p.stateKey)));
      if (rest.length === 0) continue;
      const found = await trx
        .selectFrom('event_state_keys')
        .select(['state_key_nid', 'event_type', 'state_key'])
        .where((eb) => eb.or(rest.map((p) => eb.and([eb('event_type', '=', p.type), eb('state_key', '=', p.stateKey)]))))
        .execute();
      for (const r of found) this.byKey.set(stateKey(r.event_type, r.state_key), Number(r.state_key_nid));
    }
  }

  /** Forgets every id: called when a transaction that may have created some rolled back. */
  clear(): void {
    this.byKey.clear();
  }
}

/**
 * Part of a snapshot's state: the entries of one event type with the given state keys (e.g. the
 * member events of some users), or with any state key ('all': a space's children), without
 * reading the whole state. stateKey → event nid.
 */
export async function readSnapshotSubset(
  db: Kysely<Schema>,
  snapshotNid: number,
  type: string,
  stateKeys: readonly string[] | 'all',
): Promise<Map<StateKey, number>> {
  const out = new Map<StateKey, number>();
  if (stateKeys.length === 0) return out;
  const info = await getSnapshotInfo(db, snapshotNid);
  if (info === undefined) throw new Error(`state snapshot ${snapshotNid} does not exist`);
  let query = db
    .selectFrom('state_snapshot_entries as e')
    .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
    .select(['e.snapshot_nid', 'k.state_key', 'e.event_nid'])
    .where('e.snapshot_nid', 'in', info.chain)
    .where('k.event_type', '=', type);
  if (stateKeys !== 'all') query = query.where('k.state_key', 'in', stateKeys);
  const rows = await query.execute();
  for (const layerRows of inChainOrder(info.chain, rows)) {
    for (const r of layerRows) {
      const key = stateKey(type, r.state_key);
      if (r.event_nid === null) out.delete(key);
      else out.set(key, Number(r.event_nid));
    }
  }
  return out;
}

/**
 * A few keys of several snapshots at once (e.g. the history visibility and one user's membership
 * before many events): per snapshot, stateKey → event nid for those keys it holds. Two statements
 * whatever the number of snapshots.
 */
export async function readSnapshotsSubset(
  db: Kysely<Schema>,
  snapshotNids: readonly number[],
  keys: readonly { readonly type: string; readonly stateKey: string }[],
): Promise<Map<number, Map<StateKey, number>>> {
  const out = new Map<number, Map<StateKey, number>>();
  const wanted = [...new Set(snapshotNids)];
  if (wanted.length === 0 || keys.length === 0) return out;
  const chains = new Map<number, number[]>();
  for (let i = 0; i < wanted.length; i += 500) {
    const rows = await db.selectFrom('state_snapshots').select(['snapshot_nid', 'chain']).where('snapshot_nid', 'in', wanted.slice(i, i + 500)).execute();
    for (const r of rows) chains.set(Number(r.snapshot_nid), [...(JSON.parse(r.chain) as number[]), Number(r.snapshot_nid)]);
  }
  const wantedKeys = new Set(keys.map((k) => stateKey(k.type, k.stateKey)));
  const entries = new Map<number, [StateKey, number | null][]>();
  const chainNids = [...new Set([...chains.values()].flat())];
  for (let i = 0; i < chainNids.length; i += 500) {
    const rows = await db
      .selectFrom('state_snapshot_entries as e')
      .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
      .select(['e.snapshot_nid', 'k.event_type', 'k.state_key', 'e.event_nid'])
      .where('e.snapshot_nid', 'in', chainNids.slice(i, i + 500))
      .where('k.event_type', 'in', [...new Set(keys.map((k) => k.type))])
      .where('k.state_key', 'in', [...new Set(keys.map((k) => k.stateKey))])
      .execute();
    for (const r of rows) {
      const key = stateKey(r.event_type, r.state_key);
      if (!wantedKeys.has(key)) continue;
      let list = entries.get(Number(r.snapshot_nid));
      if (list === undefined) entries.set(Number(r.snapshot_nid), (list = []));
      list.push([key, r.event_nid === null ? null : Number(r.event_nid)]);
    }
  }
  for (const [nid, chain] of chains) {
    // Later snapshots in the chain override earlier ones.
    const state = new Map<StateKey, number>();
    for (const link of chain) {
      for (const [key, eventNid] of entries.get(link) ?? []) {
        if (eventNid === null) state.delete(key);
        else state.set(key, eventNid);
      }
    }
    out.set(nid, state);
  }
  return out;
}
