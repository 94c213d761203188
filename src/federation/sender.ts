// The federation sender: this server's events go to every other server with a joined member in
// their room, in order, as transactions of at most 50 PDUs. One queue per destination, each a
// durable stream consumer on the events stream (streams/consumer.ts): its position is stored once
// the destination accepted a transaction, so nothing is lost when either side restarts. A
// transaction's id is made from the first and last positions it covers: a retry of the same
// events keeps the id, and one that took in events committed meanwhile gets a new one.
//
// Failures back off exponentially. After `maxRetries` failures in a row the destination is down:
// it is tried again only after a long interval or as soon as it contacts us. A destination back
// from being down is sent only the newest event of each room it shares with us; it fetches what
// came before with /get_missing_events.

import type { Kysely } from 'kysely';
import type { JsonValue } from '../protocol/json.js';
import { destinations, latestLocalEventsFor, localEventsFor, type OutboundPdu } from '../storage/federation/outbound.js';
import type { Schema } from '../storage/schema.js';
import type { StreamBus } from '../streams/bus.js';
import { StreamConsumer } from '../streams/consumer.js';
import type { FederationRequest, FederationResponse } from './client.js';

/** The spec's limit of PDUs per transaction. */
const PDUS_PER_TRANSACTION = 50;
const REFRESH_INTERVAL_MS = 1000;
/** Events committed within this of the first go in one transaction (fewer, fuller transactions under load). */
const GATHER_MS = 20;

export interface FederationSenderOptions {
  readonly db: Kysely<Schema>;
  readonly bus: StreamBus;
  readonly serverName: string;
  readonly client: { request(req: FederationRequest): Promise<FederationResponse> };
  readonly log: { warn(message: string, details?: object): void; info?(message: string, details?: object): void };
  /** Failures in a row before a destination is down (`federation_api.send_max_retries`). */
  readonly maxRetries: number;
  /** Pauses between attempts, doubling (default 2 s to 5 min). */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  /** How long a down destination is left alone unless it contacts us (default 1 h). */
  readonly downRetryMs?: number;
  readonly now?: () => number;
}

class DestinationQueue {
  private failures = 0;
  private downUntil = 0;
  /** Down at some point since the last delivery: the next one is only the newest events. */
  private catchUp = false;
  readonly consumer: StreamConsumer<OutboundPdu>;

  constructor(
    private readonly sender: FederationSenderOptions,
    readonly destination: string,
    startAfter: number,
    private readonly counts: { failures: number },
  ) {
    const { db, bus, serverName } = sender;
    this.consumer = new StreamConsumer<OutboundPdu>({
      name: `federation-sender:${destination}`,
      stream: 'events',
      db,
      bus,
      startAfter,
      batchSize: PDUS_PER_TRANSACTION,
      gatherMs: GATHER_MS,
      retry: sender.retry ?? { minMs: 2000, maxMs: 300_000 },
      log: sender.log,
      read: (after, limit) =>
        this.catchUp ? latestLocalEventsFor(db, destination, serverName, after) : localEventsFor(db, destination, serverName, after, limit),
      handle: (rows) => this.send(rows),
      ...(sender.now !== undefined ? { now: sender.now } : {}),
    });
  }

  /** The destination contacted us: if it was down, try again now. */
  contacted(): void {
    if (this.downUntil === 0) return;
    this.downUntil = 0;
    this.consumer.poke();
  }

  private now(): number {
    return (this.sender.now ?? Date.now)();
  }

  private async send(rows: readonly OutboundPdu[]): Promise<void> {
    if (this.downUntil > this.now()) throw new Error(`${this.destination} is down; next attempt in ${Math.round((this.downUntil - this.now()) / 1000)} s`);
    const txnId = `${rows[0]!.position}-${rows[rows.length - 1]!.position}`;
    const body = {
      origin: this.sender.serverName,
      origin_server_ts: this.now(),
      pdus: rows.map((r) => JSON.parse(r.json) as JsonValue),
    };
    try {
      const res = await this.sender.client.request({ destination: this.destination, method: 'PUT', path: `/federation/v1/send/${encodeURIComponent(txnId)}`, body });
      if (res.status !== 200) throw new Error(`${this.destination} answered ${res.status} to transaction ${txnId}`);
    } catch (err) {
      this.failures++;
      this.counts.failures++;
      if (this.failures >= this.sender.maxRetries) {
        this.downUntil = this.now() + (this.sender.downRetryMs ?? 3600_000);
        this.catchUp = true;
        this.failures = 0;
        this.sender.log.warn('federation destination is down', { destination: this.destination, retryAfterMs: this.sender.downRetryMs ?? 3600_000 });
      }
      throw err;
    }
    // Per-PDU errors are the destination's verdict on each event; nothing to resend.
    this.failures = 0;
    this.catchUp = false;
  }
}

export class FederationSender {
  private readonly queues = new Map<string, DestinationQueue>();
  private unlisten: (() => void) | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private stopped = false;
  /** The events position when destinations were last listed: a server found later joined after it. */
  private listedAt: number | undefined;
  private lastRefresh = 0;
  private refreshTimer: NodeJS.Timeout | undefined;
  /** Transactions that failed, every destination together (for metrics). */
  private readonly counts = { failures: 0 };

  constructor(private readonly options: FederationSenderOptions) {}

  /** Starts a queue for every destination, and watches for new ones as events are committed. */
  async start(): Promise<void> {
    this.unlisten = this.options.bus.listen('events', () => this.refreshSoon());
    await this.refresh();
  }

  /** A request from `origin` was authenticated: a destination that was down is tried again. */
  contacted(origin: string): void {
    this.queues.get(origin)?.contacted();
  }

  /** The destinations with a queue (for tests and metrics). */
  get destinations(): string[] {
    return [...this.queues.keys()];
  }

  /** Destinations whose queue is busy or retrying (not caught up), and transactions that failed so far (for metrics). */
  stats(): { pendingDestinations: number; failedTransactions: number } {
    let pending = 0;
    // A queue's position moves only past events for its destination, so idleness, not position, says it has caught up.
    for (const q of this.queues.values()) if (!q.consumer.idle) pending++;
    return { pendingDestinations: pending, failedTransactions: this.counts.failures };
  }

  /** Every queue's position: events up to it have been delivered. */
  position(destination: string): number | undefined {
    return this.queues.get(destination)?.consumer.position;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unlisten?.();
    clearTimeout(this.refreshTimer);
    await this.refreshing?.catch(() => undefined);
    await Promise.all([...this.queues.values()].map((q) => q.consumer.stop()));
  }

  /** At most one listing of destinations a second, however many events are committed. */
  private refreshSoon(): void {
    if (this.refreshTimer !== undefined || this.stopped) return;
    const wait = Math.max(0, this.lastRefresh + REFRESH_INTERVAL_MS - Date.now());
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refresh();
    }, wait);
    this.refreshTimer.unref();
  }

  /** Starts queues for servers that joined a room we are in; one refresh at a time. */
  private refresh(): Promise<void> {
    if (this.refreshing !== undefined) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        this.lastRefresh = Date.now();
        // Read before listing: a destination not listed last time joined after that listing's
        // position, so its queue starts there (first listing: at what is committed now).
        const now = this.options.bus.current().events;
        const startAfter = this.listedAt ?? now;
        const known = await destinations(this.options.db, this.options.serverName);
        this.listedAt = now;
        for (const destination of known) {
          if (this.stopped || this.queues.has(destination)) continue;
          const queue = new DestinationQueue(this.options, destination, startAfter, this.counts);
          this.queues.set(destination, queue);
          await queue.consumer.start();
        }
      } while (this.refreshAgain && !this.stopped);
    })()
      .catch((err: unknown) => this.options.log.warn('federation sender could not list destinations', { error: String(err) }))
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}
