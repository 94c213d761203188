// The message search index (tables/search.ts): what the indexer reads from the events stream, its
// writes, and the searches. SQLite matches with FTS5 (bm25 rank), PostgreSQL with a tsvector under
// a GIN index (ts_rank_cd) in the text search configuration the language names.

import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DialectName } from '../database.js';
import type { SearchKey } from '../../protocol/search.js';
import type { Schema } from '../schema.js';

/** The event types whose text is indexed, by the field indexed. */
export const SEARCHED_FIELDS: Readonly<Record<string, SearchKey>> = {
  'm.room.message': 'content.body',
  'm.room.name': 'content.name',
  'm.room.topic': 'content.topic',
};


/** A timeline event the indexer looks at: searchable ones and redactions. */
export interface IndexableRow {
  readonly position: number;
  readonly event_nid: number;
  readonly room_nid: number;
  readonly type: string;
  readonly sender: string;
  readonly json: string;
  readonly redacts: string | null;
  readonly redacted_by: string | null;
  readonly state_key: string | null;
  /** 1 when something relates to the event (its edits may have been stored before it). */
  readonly has_relations: number | null;
}

const INDEXED_TYPES = [...Object.keys(SEARCHED_FIELDS), 'm.room.redaction'];
/** What the indexer reads of an event (IndexableRow). */
const INDEXABLE_COLUMNS = ['stream_ordering', 'event_nid', 'room_nid', 'type', 'sender', 'json', 'redacts', 'redacted_by', 'state_key', 'has_relations'] as const;
/** The same but the JSON, which a read of every event takes of the indexable ones only. */
const INDEXABLE_COLUMNS_BUT_JSON = INDEXABLE_COLUMNS.filter((c) => c !== 'json');

/** Whether the indexer looks at events of this type: searchable ones and redactions. */
export function isIndexable(type: string): boolean {
  return type === 'm.room.redaction' || Object.hasOwn(SEARCHED_FIELDS, type);
}

/** Queues backfilled events (nids) for the indexer, in the transaction that stores them. */
export async function queueBackfilled(trx: Kysely<Schema>, nids: readonly number[]): Promise<void> {
  if (nids.length === 0) return;
  await trx
    .insertInto('search_backfill_queue')
    .values(nids.map((event_nid) => ({ event_nid })))
    .onConflict((oc) => oc.column('event_nid').doNothing())
    .execute();
}

/**
 * Up to `limit` queued backfilled events: the nids taken from the queue (to dequeue once handled,
 * whether or not their events still stand) and the timeline events among them as the indexer reads
 * them, newest first.
 */
export async function queuedBackfill(db: Kysely<Schema>, limit: number): Promise<{ nids: number[]; rows: IndexableRow[] }> {
  const nids = (await db.selectFrom('search_backfill_queue').select('event_nid').orderBy('event_nid').limit(limit).execute()).map((r) => Number(r.event_nid));
  if (nids.length === 0) return { nids, rows: [] };
  const rows = await db
    .selectFrom('events')
    .select(INDEXABLE_COLUMNS)
    .where('event_nid', 'in', nids)
    .where('status', '=', 'timeline')
    .where('stream_ordering', 'is not', null)
    .orderBy('stream_ordering', 'desc')
    .execute();
  return { nids, rows: rows.map(indexableRow) };
}

/** Takes handled events (nids) out of the queue. */
export async function dequeueBackfilled(db: Kysely<Schema>, nids: readonly number[]): Promise<void> {
  if (nids.length > 0) await db.deleteFrom('search_backfill_queue').where('event_nid', 'in', [...nids]).execute();
}

type EventsRow = Omit<IndexableRow, 'position' | 'event_nid' | 'room_nid' | 'has_relations'> & {
  stream_ordering: number | string | null;
  event_nid: number | string;
  room_nid: number | string;
  has_relations: number | string | null;
};

function indexableRow(r: EventsRow): IndexableRow {
  return { ...r, position: Number(r.stream_ordering), event_nid: Number(r.event_nid), room_nid: Number(r.room_nid), has_relations: r.has_relations === null ? null : Number(r.has_relations) };
}

/**
 * Timeline events after `after` (0 or more), in position order, at most `limit`; the JSON only of
 * those the indexer looks at (isIndexable), '{}' for the rest. Selected by position alone (only
 * timeline events hold positions): a filter on status or type made PostgreSQL without statistics on
 * the table (autovacuum off) scan the whole table and sort it, 25–40 ms a read at 300,000 events.
 */
export async function indexableAfter(db: Kysely<Schema>, after: number, limit: number): Promise<IndexableRow[]> {
  const rows = await db
    .selectFrom('events')
    .select(INDEXABLE_COLUMNS_BUT_JSON)
    .select((eb) => eb.case().when('type', 'in', INDEXED_TYPES).then(eb.ref('json')).else('{}').end().as('json'))
    .where('stream_ordering', '>', after)
    .orderBy('stream_ordering')
    .limit(limit)
    .execute();
  return rows.map(indexableRow);
}

export interface SearchDocument {
  readonly position: number;
  readonly eventNid: number;
  readonly roomNid: number;
  readonly sender: string;
  readonly type: string;
  readonly key: SearchKey;
  readonly value: string;
}

/**
 * Adds documents (one already indexed is left as it is: the indexer may see a batch twice), many
 * rows per statement. `config`: PostgreSQL's text search configuration.
 */
export async function indexDocuments(db: Kysely<Schema>, dialect: DialectName, config: string, docs: readonly SearchDocument[]): Promise<void> {
  if (docs.length === 0) return;
  if (dialect === 'postgres') {
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < docs.length; i += 500) {
        const values = docs.slice(i, i + 500).map((d) => sql`(${d.position}, ${d.eventNid}, ${d.roomNid}, ${d.sender}, ${d.type}, ${d.key}, to_tsvector(${config}::regconfig, ${d.value}))`);
        await sql`insert into event_search (position, event_nid, room_nid, sender, type, key, vector) values ${sql.join(values)} on conflict do nothing`.execute(trx);
      }
    });
    return;
  }
  // SQLite's statements run on the event loop: a few short transactions with a turn for other
  // work between them, rather than one long one (500 messages took some 30 ms).
  for (let i = 0; i < docs.length; i += SQLITE_CHUNK) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    let part = docs.slice(i, i + SQLITE_CHUNK);
    await db.transaction().execute(async (trx) => {
      const known = await trx.selectFrom('event_search').select('position').where('position', 'in', part.map((d) => d.position)).execute();
      if (known.length > 0) {
        const skip = new Set(known.map((r) => Number(r.position)));
        part = part.filter((d) => !skip.has(d.position));
        if (part.length === 0) return;
      }
      await trx
        .insertInto('event_search')
        .values(part.map((d) => ({ position: d.position, event_nid: d.eventNid, room_nid: d.roomNid, sender: d.sender, type: d.type, key: d.key })))
        .execute();
      await sql`insert into event_search_fts (rowid, value) values ${sql.join(part.map((d) => sql`(${d.position}, ${d.value})`))}`.execute(trx);
    });
  }
}

/** Documents per SQLite transaction. */
const SQLITE_CHUNK = 100;

/** Removes these events, once redacted, from the index. */
export async function unindexEvents(db: Kysely<Schema>, dialect: DialectName, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('event_search as s')
      .innerJoin('events as e', 'e.event_nid', 's.event_nid')
      .select('s.position')
      .where('e.event_id', 'in', eventIds)
      // Only where the redaction applies (it set redacted_by): one its sender may not make keeps the event.
      .where('e.redacted_by', 'is not', null)
      .execute();
    const positions = rows.map((r) => Number(r.position));
    if (positions.length === 0) return;
    await trx.deleteFrom('event_search').where('position', 'in', positions).execute();
    if (dialect === 'sqlite') await sql`delete from event_search_fts where rowid in (${sql.join(positions)})`.execute(trx);
  });
}

/** Words of a search term: runs of letters and digits (what both backends' parsers keep). */
export function searchWords(term: string): string[] {
  return [...new Set((term.normalize('NFC').match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 20);
}

/** Every word must match, each as a word or a word's beginning. */
function matchQuery(dialect: DialectName, words: readonly string[]): string {
  return dialect === 'postgres' ? words.map((w) => `${w}:*`).join(' & ') : words.map((w) => `"${w}"*`).join(' ');
}

export interface SearchQuery {
  readonly words: readonly string[];
  /** PostgreSQL's text search configuration. */
  readonly config: string;
  readonly roomNids: readonly number[];
  readonly keys: readonly SearchKey[];
  readonly senders?: readonly string[];
  readonly notSenders?: readonly string[];
  /** Exact types (patterns are matched by the caller). */
  readonly types?: readonly string[];
  readonly notTypes?: readonly string[];
}

export interface SearchHit {
  readonly position: number;
  readonly eventNid: number;
  readonly roomNid: number;
  /** Higher is better. */
  readonly rank: number;
  /** On rank pages: what countMatches would answer, read by the same statement. */
  readonly count?: number;
}

function conditions(dialect: DialectName, q: SearchQuery, alias: string): RawBuilder<unknown>[] {
  const col = (c: string) => sql.ref(`${alias}.${c}`);
  // SQLite reads each FTS match's row by its position; the room index would probe it once per room.
  const room = dialect === 'sqlite' ? sql`+${col('room_nid')}` : col('room_nid');
  const out: RawBuilder<unknown>[] = [sql`${room} in (${sql.join(q.roomNids)})`, sql`${col('key')} in (${sql.join(q.keys)})`];
  if (q.senders !== undefined) out.push(q.senders.length === 0 ? sql`1 = 0` : sql`${col('sender')} in (${sql.join(q.senders)})`);
  if (q.notSenders !== undefined && q.notSenders.length > 0) out.push(sql`${col('sender')} not in (${sql.join(q.notSenders)})`);
  if (q.types !== undefined) out.push(q.types.length === 0 ? sql`1 = 0` : sql`${col('type')} in (${sql.join(q.types)})`);
  if (q.notTypes !== undefined && q.notTypes.length > 0) out.push(sql`${col('type')} not in (${sql.join(q.notTypes)})`);
  return out;
}

/**
 * PostgreSQL ranks, and counts, at most the newest this many matches of a term (in the rooms
 * searched). Ranking every match of a word found in half the messages would take seconds; a word
 * that common ranks among its newest matches, and its count reads as "at least" this.
 */
export const MATCH_WINDOW = 10_000;

/**
 * SQLite ranks at most the newest this many matches in the rooms searched: reading a match's row
 * for the rooms and bm25 cost some 5 µs a match over a large index (10,000 took 45-60 ms, and a
 * loaded machine triples it).
 */
export const SQLITE_RANK_WINDOW = 1_000;

/** SQLite counts a term's newest matches across the whole index up to this many (1.5 ms per 10,000). */
const SQLITE_COUNTED = 100_000;

/**
 * SQLite's count beside a window of the newest matches in the rooms (`newest`, its positions
 * `position`): exact when the window holds them all, else the term's matches in the whole index
 * scaled by the share of them the window kept (the matches from its oldest on, counted by FTS5
 * alone, without reading rows). Its columns: `in_window`, `visited`, `matches` (estimatedCount).
 */
function sqliteCount(match: string, window: number): RawBuilder<unknown> {
  // One walk of FTS5 for both counts (a prefix's matches are merged from all its words' lists),
  // newest first so that the window's share is among them; none when the window holds every match.
  return sql`select w.n as in_window, case when w.n < ${window} then null else m.visited end as visited, case when w.n < ${window} then null else m.matches end as matches
    from (select count(*) as n from newest) w,
    (select count(*) as matches, sum(rowid >= (select min(position) from newest)) as visited from (
      select rowid from event_search_fts where event_search_fts match ${match} and (select count(*) from newest) >= ${window} order by rowid desc limit ${SQLITE_COUNTED})) m`;
}

interface CountRow {
  readonly in_window: number | string;
  readonly visited: number | string | null;
  readonly matches: number | string | null;
}

function estimatedCount(r: CountRow): number {
  const inWindow = Number(r.in_window);
  if (r.visited === null || r.matches === null || Number(r.visited) === 0) return inWindow;
  return Math.max(inWindow, Math.round((Number(r.matches) * inWindow) / Number(r.visited)));
}

/**
 * One page of matches: by rank (best first, `offset` matches skipped) or by recency (newest first,
 * below the position `before`).
 */
export async function searchIndex(
  db: Kysely<Schema>,
  dialect: DialectName,
  q: SearchQuery,
  page: { readonly order: 'rank' | 'recent'; readonly offset: number; readonly before: number | undefined; readonly limit: number },
): Promise<SearchHit[]> {
  if (q.words.length === 0 || q.roomNids.length === 0 || q.keys.length === 0) return [];
  const match = matchQuery(dialect, q.words);
  const where = conditions(dialect, q, 's');
  // On SQLite said of the FTS rowid too, so that FTS5 starts its walk there.
  if (page.before !== undefined) where.push(dialect === 'sqlite' ? sql`f.rowid < ${page.before}` : sql`s.position < ${page.before}`);
  const filters = sql.join(where, sql` and `);
  type Row = { position: number | string; event_nid: number | string; room_nid: number | string; rank: number | string; count?: number | string } & Partial<CountRow>;
  let rows: Row[];
  if (dialect === 'postgres') {
    ({ rows } =
      page.order === 'rank'
        ? await sql<Row>`
          with q as (select to_tsquery(${q.config}::regconfig, ${match}) as query),
          newest as (select s.position, s.event_nid, s.room_nid, s.vector from event_search s, q where s.vector @@ q.query and ${filters} order by s.position desc limit ${MATCH_WINDOW})
          select n.position, n.event_nid, n.room_nid, ts_rank_cd(n.vector, q.query) as rank, count(*) over () as count from newest n, q
          order by rank desc, n.position desc limit ${page.limit} offset ${page.offset}`.execute(db)
        : await sql<Row>`
          select s.position, s.event_nid, s.room_nid, 0 as rank from event_search s
          where s.vector @@ to_tsquery(${q.config}::regconfig, ${match}) and ${filters}
          order by s.position desc limit ${page.limit}`.execute(db));
  } else {
    // CROSS JOIN keeps the full-text match the outer loop (SQLite would otherwise run it once per
    // row of the rooms); FTS5 walks its matches newest first, so the window costs its size only.
    ({ rows } =
      page.order === 'rank'
        ? await sql<Row>`
          with newest as materialized (
            select s.position, s.event_nid, s.room_nid, bm25(event_search_fts) as score
            from event_search_fts f cross join event_search s on s.position = f.rowid
            where event_search_fts match ${match} and ${filters}
            order by f.rowid desc limit ${SQLITE_RANK_WINDOW}),
          counted as materialized (${sqliteCount(match, SQLITE_RANK_WINDOW)})
          select position, event_nid, room_nid, -score as rank, c.in_window, c.visited, c.matches from newest, counted c
          order by score, position desc limit ${page.limit} offset ${page.offset}`.execute(db)
        : await sql<Row>`
          select s.position, s.event_nid, s.room_nid, 0 as rank
          from event_search_fts f cross join event_search s on s.position = f.rowid
          where event_search_fts match ${match} and ${filters}
          order by f.rowid desc limit ${page.limit}`.execute(db));
  }
  return rows.map((r) => ({
    position: Number(r.position),
    eventNid: Number(r.event_nid),
    roomNid: Number(r.room_nid),
    rank: Number(r.rank),
    ...(r.count !== undefined ? { count: Number(r.count) } : {}),
    ...(r.in_window !== undefined ? { count: estimatedCount(r as CountRow) } : {}),
  }));
}

/**
 * How many indexed events match, before history visibility is applied: an estimate, as the spec
 * allows. PostgreSQL counts up to MATCH_WINDOW; SQLite counts exactly up to SQLITE_RANK_WINDOW and
 * estimates beyond (sqliteCount). A rank page says the same (SearchHit.count) at no extra cost.
 */
export async function countMatches(db: Kysely<Schema>, dialect: DialectName, q: SearchQuery): Promise<number> {
  if (q.words.length === 0 || q.roomNids.length === 0 || q.keys.length === 0) return 0;
  const match = matchQuery(dialect, q.words);
  const filters = sql.join(conditions(dialect, q, 's'), sql` and `);
  if (dialect === 'postgres') {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from (select 1 from event_search s where s.vector @@ to_tsquery(${q.config}::regconfig, ${match}) and ${filters} limit ${MATCH_WINDOW}) m`.execute(db);
    return Number(rows[0]?.n ?? 0);
  }
  const { rows } = await sql<CountRow>`
    with newest as materialized (
      select f.rowid as position from event_search_fts f cross join event_search s on s.position = f.rowid
      where event_search_fts match ${match} and ${filters}
      order by f.rowid desc limit ${SQLITE_RANK_WINDOW})
    ${sqliteCount(match, SQLITE_RANK_WINDOW)}`.execute(db);
  return rows[0] === undefined ? 0 : estimatedCount(rows[0]);
}

/** PostgreSQL's text search configuration for an ISO 639 language code; 'simple' for others. */
export function textSearchConfig(language: string): string {
  return TEXT_SEARCH_CONFIGS[language.toLowerCase()] ?? 'simple';
}

const TEXT_SEARCH_CONFIGS: Readonly<Record<string, string>> = {
  ar: 'arabic', hy: 'armenian', eu: 'basque', ca: 'catalan', da: 'danish', nl: 'dutch', en: 'english', fi: 'finnish',
  fr: 'french', de: 'german', el: 'greek', hi: 'hindi', hu: 'hungarian', id: 'indonesian', ga: 'irish', it: 'italian',
  lt: 'lithuanian', ne: 'nepali', no: 'norwegian', nb: 'norwegian', nn: 'norwegian', pt: 'portuguese', ro: 'romanian',
  ru: 'russian', sr: 'serbian', es: 'spanish', sv: 'swedish', ta: 'tamil', tr: 'turkish', yi: 'yiddish',
  // Three-letter codes (ISO 639-2) of the same languages.
  ara: 'arabic', arm: 'armenian', hye: 'armenian', baq: 'basque', eus: 'basque', cat: 'catalan', dan: 'danish', dut: 'dutch',
  nld: 'dutch', eng: 'english', fin: 'finnish', fre: 'french', fra: 'french', ger: 'german', deu: 'german', gre: 'greek',
  ell: 'greek', hin: 'hindi', hun: 'hungarian', ind: 'indonesian', gle: 'irish', ita: 'italian', lit: 'lithuanian',
  nep: 'nepali', nor: 'norwegian', por: 'portuguese', rum: 'romanian', ron: 'romanian', rus: 'russian', srp: 'serbian',
  spa: 'spanish', swe: 'swedish', tam: 'tamil', tur: 'turkish', yid: 'yiddish',
};

/**
 * Edited messages (client-server API, "Event replacements"): an edited message is found by the
 * text its newest valid edit gives it (`m.new_content.body`; an edit by its sender, of the same
 * type, of a message that is no edit itself), not by its old text: clients show search results
 * with the edit applied, and a hit on words no longer shown would puzzle. The edit events
 * themselves are not indexed (their "* …" body would be a second hit for one message). So each
 * message keeps one document, under its own event, at the position of the version indexed; when
 * that edit is redacted, the message is indexed again by the version before it.
 */
export async function currentVersions(db: Kysely<Schema>, originalNids: readonly number[]): Promise<SearchDocument[]> {
  if (originalNids.length === 0) return [];
  const originals = await db
    .selectFrom('events')
    .select(['event_nid', 'event_id', 'room_nid', 'type', 'sender', 'json', 'stream_ordering', 'redacted_by', 'state_key'])
    .where('event_nid', 'in', [...new Set(originalNids)])
    .where('status', '=', 'timeline')
    .where('type', '=', 'm.room.message')
    .execute();
  const live = originals.filter((o) => o.redacted_by === null && o.stream_ordering !== null && o.state_key === null);
  if (live.length === 0) return [];
  // The originals' edits still standing (a redacted one has no relation row any more); an
  // original that is itself an edit takes none.
  const relations = await db
    .selectFrom('event_relations')
    .select(['event_nid', 'event_id', 'relates_to', 'sender', 'type', 'origin_server_ts', 'stream_ordering'])
    .where((eb) => eb.or([eb('relates_to', 'in', live.map((o) => o.event_id)), eb('event_nid', 'in', live.map((o) => o.event_nid))]))
    .where('rel_type', '=', 'm.replace')
    .execute();
  const isEdit = new Set(relations.map((r) => Number(r.event_nid)));
  const newest = new Map<string, (typeof relations)[number]>();
  for (const o of live) {
    if (isEdit.has(Number(o.event_nid))) continue;
    for (const r of relations) {
      if (r.relates_to !== o.event_id || r.sender !== o.sender || r.type !== o.type) continue;
      const best = newest.get(o.event_id);
      if (best === undefined || Number(r.origin_server_ts) > Number(best.origin_server_ts) || (Number(r.origin_server_ts) === Number(best.origin_server_ts) && r.event_id > best.event_id)) newest.set(o.event_id, r);
    }
  }
  const editNids = [...newest.values()].map((r) => Number(r.event_nid));
  const editJson = new Map<number, string>();
  if (editNids.length > 0) {
    for (const r of await db.selectFrom('events').select(['event_nid', 'json']).where('event_nid', 'in', editNids).execute()) editJson.set(Number(r.event_nid), r.json);
  }
  const body = (json: string | undefined, path: 'edit' | 'own'): string | undefined => {
    if (json === undefined) return undefined;
    const content = (JSON.parse(json) as { content?: Record<string, unknown> }).content;
    const source = path === 'edit' ? content?.['m.new_content'] : content;
    const value = typeof source === 'object' && source !== null ? (source as Record<string, unknown>)['body'] : undefined;
    return typeof value === 'string' && value.trim() !== '' ? value : undefined;
  };
  const docs: SearchDocument[] = [];
  for (const o of live) {
    if (isEdit.has(Number(o.event_nid))) continue;
    const edit = newest.get(o.event_id);
    const value = edit !== undefined ? body(editJson.get(Number(edit.event_nid)), 'edit') : body(o.json, 'own');
    if (value === undefined) continue;
    const position = Number(edit !== undefined ? edit.stream_ordering : o.stream_ordering);
    docs.push({ position, eventNid: Number(o.event_nid), roomNid: Number(o.room_nid), sender: o.sender, type: o.type, key: 'content.body', value });
  }
  return docs;
}

/** The events (nids) whose documents were indexed at these positions (by the version there). */
export async function documentsAt(db: Kysely<Schema>, positions: readonly number[]): Promise<number[]> {
  if (positions.length === 0) return [];
  const rows = await db.selectFrom('event_search').select('event_nid').where('position', 'in', [...positions]).execute();
  return rows.map((r) => Number(r.event_nid));
}

/** Replaces the documents of the events `docs` are for (and drops those of `events` without one). */
export async function replaceDocuments(db: Kysely<Schema>, dialect: DialectName, config: string, events: readonly number[], docs: readonly SearchDocument[]): Promise<void> {
  const nids = [...new Set([...events, ...docs.map((d) => d.eventNid)])];
  if (nids.length === 0) return;
  await db.transaction().execute(async (trx) => {
    const old = (await trx.selectFrom('event_search').select('position').where('event_nid', 'in', nids).execute()).map((r) => Number(r.position));
    if (old.length > 0) {
      await trx.deleteFrom('event_search').where('position', 'in', old).execute();
      if (dialect === 'sqlite') await sql`delete from event_search_fts where rowid in (${sql.join(old)})`.execute(trx);
    }
  });
  await indexDocuments(db, dialect, config, docs);
}
