// Reading the state of many snapshots at once (an initial sync of a user in hundreds of rooms):
// every snapshot's chain in one statement, and all their entries in another, instead of two
// statements per room. With lazy-loaded members, member entries are read only for the users asked.

import type { Kysely } from 'kysely';
import { stateKey, type StateKey } from '../../protocol/events.js';
import type { Schema } from '../schema.js';

const IDS_PER_STATEMENT = 1000;
const MEMBER = 'm.room.member';

interface EntryRow {
  snapshot_nid: number;
  event_type: string;
  state_key: string;
  event_nid: number | null;
}

/**
 * The state of each snapshot: stateKey(type, state_key) → event nid. With `members`, member
 * entries only for those users (others' are left out); without, every entry.
 */
export async function readSnapshots(
  db: Kysely<Schema>,
  snapshotNids: readonly number[],
  members?: readonly string[],
): Promise<Map<number, Map<StateKey, number>>> {
  const out = new Map<number, Map<StateKey, number>>();
  const wanted = [...new Set(snapshotNids)];
  if (wanted.length === 0) return out;

  const chains = new Map<number, number[]>();
  for (let i = 0; i < wanted.length; i += IDS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('state_snapshots')
      .select(['snapshot_nid', 'chain'])
      .where('snapshot_nid', 'in', wanted.slice(i, i + IDS_PER_STATEMENT))
      .execute();
    for (const r of rows) {
      const nid = Number(r.snapshot_nid);
      chains.set(nid, [...(JSON.parse(r.chain) as number[]), nid]);
    }
  }
  const all = [...new Set([...chains.values()].flat())];

  // Entries grouped by the snapshot that holds them.
  const bySnapshot = new Map<number, EntryRow[]>();
  const keep = (rows: EntryRow[]) => {
    for (const r of rows) {
      const nid = Number(r.snapshot_nid);
      let list = bySnapshot.get(nid);
      if (!list) bySnapshot.set(nid, (list = []));
      list.push(r);
    }
  };
  const entries = () =>
    db
      .selectFrom('state_snapshot_entries as e')
      .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
      .select(['e.snapshot_nid', 'k.event_type', 'k.state_key', 'e.event_nid']);
  for (let i = 0; i < all.length; i += IDS_PER_STATEMENT) {
    const chunk = all.slice(i, i + IDS_PER_STATEMENT);
    if (members === undefined) {
      keep(await entries().where('e.snapshot_nid', 'in', chunk).execute());
      continue;
    }
    keep(await entries().where('e.snapshot_nid', 'in', chunk).where('k.event_type', '!=', MEMBER).execute());
    const users = [...new Set(members)];
    for (let j = 0; j < users.length; j += IDS_PER_STATEMENT) {
      keep(
        await entries()
          .where('e.snapshot_nid', 'in', chunk)
          .where('k.event_type', '=', MEMBER)
          .where('k.state_key', 'in', users.slice(j, j + IDS_PER_STATEMENT))
          .execute(),
      );
    }
  }

  for (const [nid, chain] of chains) {
    // Later snapshots of the chain override earlier ones; a null entry removes the key.
    const state = new Map<StateKey, number>();
    for (const link of chain) {
      for (const r of bySnapshot.get(link) ?? []) {
        const key = stateKey(r.event_type, r.state_key);
        if (r.event_nid === null) state.delete(key);
        else state.set(key, Number(r.event_nid));
      }
    }
    out.set(nid, state);
  }
  return out;
}
