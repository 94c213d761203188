// Message search: the indexer and the POST /search service.
//
// The indexer is a durable consumer of the events stream (streams/consumer.ts), apart from the
// send path: it indexes the text of m.room.message (content.body), m.room.name and m.room.topic
// events and takes redacted events out. An edited message is found by its newest edit's text
// rather than its old one, and edits are not indexed themselves (see currentVersions in
// storage/search/event-search.ts). Started at position 0 on a database without the index, it
// indexes everything stored before: that is the upgrade path too. History fetched later (negative
// positions, which the stream does not reach) waits in a queue the writer fills; the indexer drains
// it after each batch, at start, and before each search.
//
// A search sees what was sent before it: it first waits (up to WAIT_MS) for the indexer to reach
// the events position current when it arrived.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import { parseSearchRequest } from '../protocol/search.js';
import type { DialectName } from '../storage/database.js';
import type { Schema } from '../storage/schema.js';
import { relationOf, REPLACE } from '../protocol/relations.js';
import {
  currentVersions,
  dequeueBackfilled,
  documentsAt,
  indexableAfter,
  indexDocuments,
  queuedBackfill,
  replaceDocuments,
  SEARCHED_FIELDS,
  textSearchConfig,
  unindexEvents,
  type IndexableRow,
  type SearchDocument,
} from '../storage/search/event-search.js';
import type { StreamBus } from '../streams/bus.js';
import { StreamConsumer } from '../streams/consumer.js';
import type { Actor } from './actor.js';
import type { RoomService } from './service.js';

const CONSUMER_NAME = 'search-index';
const BATCH = 500;
/**
 * After a wake, how long the indexer lets events gather before reading them: indexing them one
 * by one cost a busy room's sends about 40% of their throughput. A search pokes it at once.
 */
const GATHER_MS = 250;
/** How long a search waits for the indexer to reach the events sent before it. */
const WAIT_MS = 2_000;

export interface SearchServiceOptions {
  readonly db: Kysely<Schema>;
  readonly dialect: DialectName;
  readonly bus: StreamBus;
  readonly rooms: RoomService;
  /** `sync_api.search.enabled`: off, nothing is indexed and searches are refused. */
  readonly enabled: boolean;
  /** `sync_api.search.language` (ISO 639). */
  readonly language: string;
  readonly log: { warn(message: string, details?: object): void };
}

/**
 * The index documents of a batch, the events its redactions took out, the events its edits edit,
 * and its messages that something related to before they were stored (an edit from another server
 * may come before the message it edits): those are indexed by their newest edit's text.
 */
export function documentsOf(rows: readonly IndexableRow[]): { docs: SearchDocument[]; redacted: string[]; edited: string[]; relatedFirst: number[] } {
  const docs: SearchDocument[] = [];
  const redacted: string[] = [];
  const edited: string[] = [];
  const relatedFirst: number[] = [];
  for (const r of rows) {
    if (r.type === 'm.room.redaction') {
      if (r.redacts !== null) redacted.push(r.redacts);
      else {
        // Room versions 11 and later carry `redacts` in the content.
        const content = (JSON.parse(r.json) as { content?: unknown }).content;
        if (isJsonObject(content) && typeof content['redacts'] === 'string') redacted.push(content['redacts']);
      }
      continue;
    }
    if (!Object.hasOwn(SEARCHED_FIELDS, r.type) || r.redacted_by !== null) continue;
    const key = SEARCHED_FIELDS[r.type]!;
    if (r.type !== 'm.room.message' && r.state_key !== '') continue;
    const content = (JSON.parse(r.json) as { content?: unknown }).content;
    const edits = r.type === 'm.room.message' && isJsonObject(content) ? editedBy(content) : undefined;
    if (edits !== undefined) {
      edited.push(edits);
      continue;
    }
    if (r.type === 'm.room.message' && r.has_relations === 1) {
      relatedFirst.push(r.event_nid);
      continue;
    }
    const value = isJsonObject(content) ? content[key.slice('content.'.length)] : undefined;
    if (typeof value !== 'string' || value.trim() === '') continue;
    docs.push({ position: r.position, eventNid: r.event_nid, roomNid: r.room_nid, sender: r.sender, type: r.type, key, value });
  }
  return { docs, redacted, edited, relatedFirst };
}

/** The event an edit replaces (an m.replace relation with m.new_content), if it is one. */
function editedBy(content: JsonObject): string | undefined {
  const rel = relationOf(content);
  return rel?.relType === REPLACE && isJsonObject(content['m.new_content']) ? rel.eventId : undefined;
}

export class SearchService {
  private readonly consumer: StreamConsumer<IndexableRow>;
  private readonly config: string;
  /** The position of the last batch indexed. */
  private indexed = 0;
  /** The drain of the backfill queue running, and the one waiting to run after it. */
  private drain: Promise<void> | undefined;
  private nextDrain: Promise<void> | undefined;
  private stopping = false;

  constructor(private readonly options: SearchServiceOptions) {
    this.config = textSearchConfig(options.language);
    this.consumer = new StreamConsumer<IndexableRow>({
      name: CONSUMER_NAME,
      stream: 'events',
      db: options.db,
      bus: options.bus,
      batchSize: BATCH,
      gatherMs: GATHER_MS,
      log: options.log,
      read: (after, limit) => indexableAfter(options.db, after, limit),
      handle: async (rows) => {
        await this.index(rows);
        this.indexed = rows[rows.length - 1]!.position;
        // Not awaited: a long queue must not hold up the live index. Failures are logged and leave
        // the queue for the next drain.
        void this.drainBackfill().catch(() => undefined);
      },
    });
  }

  private async index(rows: readonly IndexableRow[]): Promise<void> {
    const { docs, redacted, edited, relatedFirst } = documentsOf(rows);
    await indexDocuments(this.options.db, this.options.dialect, this.config, docs);
    await unindexEvents(this.options.db, this.options.dialect, redacted);
    await this.reindexEdited(edited, redacted, relatedFirst);
  }

  /**
   * Indexes the queued backfilled events, a batch at a time, until the queue is empty. One drain
   * runs at a time; a call while one runs waits for the next, which reads the queue as it stands
   * after the call (calls meanwhile share it).
   */
  drainBackfill(): Promise<void> {
    if (this.nextDrain !== undefined) return this.nextDrain;
    const next: Promise<void> = (this.drain ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        this.nextDrain = undefined;
        this.drain = next;
        return this.drainQueue();
      })
      .finally(() => {
        if (this.drain === next) this.drain = undefined;
      });
    this.nextDrain = next;
    return next;
  }

  private async drainQueue(): Promise<void> {
    try {
      while (!this.stopping) {
        const { nids, rows } = await queuedBackfill(this.options.db, BATCH);
        if (nids.length === 0) return;
        await this.index(rows);
        await dequeueBackfilled(this.options.db, nids);
      }
    } catch (err) {
      this.options.log.warn('search: indexing backfilled events failed', { err });
      throw err;
    }
  }

  /**
   * Indexes again, by their newest standing version, the messages edited in a batch, those whose
   * indexed version was an edit the batch redacted, and (`relatedFirst`, by nid) its messages
   * that had relations when stored.
   */
  private async reindexEdited(edited: readonly string[], redacted: readonly string[], relatedFirst: readonly number[]): Promise<void> {
    if (edited.length === 0 && redacted.length === 0 && relatedFirst.length === 0) return;
    const { db, dialect } = this.options;
    const ids = [...new Set([...edited, ...redacted])];
    const events = ids.length === 0 ? [] : await db.selectFrom('events').select(['event_id', 'event_nid', 'stream_ordering']).where('event_id', 'in', ids).execute();
    const editedSet = new Set(edited);
    const redactedSet = new Set(redacted);
    const originals = events.filter((e) => editedSet.has(e.event_id)).map((e) => Number(e.event_nid));
    const redactedAt = events.filter((e) => redactedSet.has(e.event_id) && e.stream_ordering !== null).map((e) => Number(e.stream_ordering));
    originals.push(...relatedFirst, ...(await documentsAt(db, redactedAt)));
    if (originals.length === 0) return;
    await replaceDocuments(db, dialect, this.config, originals, await currentVersions(db, originals));
  }

  async start(): Promise<void> {
    if (!this.options.enabled) return;
    await this.consumer.start();
    // Not awaited: a long queue (an upgraded database's backfilled history) must not hold up the start.
    void this.drainBackfill().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.consumer.stop();
    await Promise.allSettled([this.drain, this.nextDrain]);
  }

  /** POST /search. */
  async search(actor: Actor, body: JsonObject, nextBatch: string | undefined): Promise<JsonObject> {
    // Synapse answers a server with search turned off this way too (400 M_UNKNOWN).
    if (!this.options.enabled) throw new HearthError(400, 'M_UNKNOWN', 'Search is disabled on this server');
    const request = parseSearchRequest(body);
    if (request.roomEvents === undefined) return { search_categories: {} };
    await this.caughtUp(this.options.bus.current().events);
    await this.backfillCaughtUp();
    const index = { dialect: this.options.dialect, textSearchConfig: this.config };
    const roomEvents = await this.options.rooms.search(actor, index, request.roomEvents, nextBatch);
    return { search_categories: { room_events: roomEvents as unknown as JsonObject } };
  }

  /**
   * Whether the indexer has handled the events up to `position` (or found nothing more to read) and
   * no backfill drain runs or waits.
   */
  settled(position: number): boolean {
    const live = Math.max(this.indexed, this.consumer.position) >= position || this.consumer.idle;
    return live && this.drain === undefined && this.nextDrain === undefined;
  }

  /** Waits for the backfilled events queued before the search to be indexed, at most WAIT_MS. */
  private async backfillCaughtUp(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, WAIT_MS)));
    try {
      await Promise.race([this.drainBackfill().catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until the index holds the events up to `position`, or the indexer has nothing left to read, at most WAIT_MS. */
  private async caughtUp(position: number): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    if (Math.max(this.indexed, this.consumer.position) < position) this.consumer.poke();
    while (Math.max(this.indexed, this.consumer.position) < position && !this.consumer.idle && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
