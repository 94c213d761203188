// The application service pusher: the events each service is interested in (interest.ts) go to
// its url as transactions (`PUT /_matrix/app/v1/transactions/{txnId}`, application service API),
// in stream order, up to 100 events each. One queue per service with a url, each a durable stream
// consumer on the events stream (streams/consumer.ts).
//
// Nothing lost, nothing twice, across restarts of either side: a transaction is stored
// (appservice_queues) before it is sent and resent as stored, same id and body, until the service
// answers 200; then what it covers is marked delivered in the same row, and events at or before
// that mark are not sent again if the consumer reads them once more. Failures back off
// exponentially up to a cap.
//
// A service that asked for ephemeral data (ephemeral.ts) is also sent typing, receipts, presence
// and to-device messages, in transactions of their own (`events` empty) that share the queue's
// transaction ids and its single pending slot: the event consumer and the ephemeral pass take
// turns, and each first resends whatever transaction is pending. Where the ephemeral streams
// were delivered up to is kept beside the events' position.
//
// Paths, naming fallback and authorization: service-api.ts.

import type { Kysely } from 'kysely';
import type { RoomReader } from '../rooms/reader.js';
import type { JsonObject } from '../protocol/json.js';
import { markDelivered, queueState, savePending, timelineAfter, type EphemeralPositions, type QueueState, type TimelineRow } from '../storage/appservice/queues.js';
import type { Schema } from '../storage/schema.js';
import type { StreamBus } from '../streams/bus.js';
import { StreamConsumer } from '../streams/consumer.js';
import { collectEphemeral, type EphemeralSources } from './ephemeral.js';
import { ServiceInterest, type InterestDeps } from './interest.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';
import { ServiceApi, type ServiceAnswer, type ServiceHttp } from './service-api.js';

/** Events per transaction. */
const EVENTS_PER_TRANSACTION = 100;
/** Events committed within this of the first go in the same transaction. */
const GATHER_MS = 10;

export interface AppServicePusherOptions {
  readonly db: Kysely<Schema>;
  readonly bus: StreamBus;
  readonly reader: RoomReader;
  readonly services: AppServices;
  readonly interest: InterestDeps;
  /** Where typing, receipts, presence and to-device messages are read, for services that want them. */
  readonly ephemeral: EphemeralSources;
  readonly http: ServiceHttp;
  /** `global.protocol_name`: the naming tried first. */
  readonly protocolName: 'chat' | 'matrix';
  /** Also send the hs_token as the `access_token` query parameter (services older than spec 1.4). */
  readonly legacyAuthorization: boolean;
  readonly log: { warn(message: string, details?: object): void };
  /** Pauses between attempts, doubling (default 1 s to 5 min). */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  readonly now?: () => number;
}

/** Why a transaction was not taken: the consumer retries the batch. */
class DeliveryError extends Error {}

class ServiceQueue {
  readonly consumer: StreamConsumer<TimelineRow>;
  private readonly interest: ServiceInterest;
  private readonly api: ServiceApi;
  /** The event consumer and the ephemeral pass take turns: one transaction at a time. */
  private turn: Promise<unknown> = Promise.resolve();
  private readonly ephemeral: EphemeralPass | undefined;
  /** How far the ephemeral streams were read (at or past what was delivered). */
  private ephemeralRead: EphemeralPositions | undefined;
  /** Transactions the service did not take (for metrics). */
  failedTransactions = 0;

  constructor(
    private readonly options: AppServicePusherOptions,
    readonly service: AppServiceRegistration & { readonly url: string },
    startAfter: number,
  ) {
    this.api = new ServiceApi(service, options);
    this.interest = new ServiceInterest(options.services, service, options.interest);
    this.consumer = new StreamConsumer<TimelineRow>({
      name: `appservice:${service.id}`,
      stream: 'events',
      db: options.db,
      bus: options.bus,
      startAfter,
      batchSize: EVENTS_PER_TRANSACTION,
      gatherMs: GATHER_MS,
      retry: this.retry,
      log: options.log,
      read: (after, limit) => timelineAfter(options.db, after, limit),
      handle: (rows) => this.exclusive(() => this.handle(rows)),
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
    if (service.receive_ephemeral) this.ephemeral = new EphemeralPass(this);
  }

  get retry(): { readonly minMs: number; readonly maxMs: number } {
    return this.options.retry ?? { minMs: 1000, maxMs: 300_000 };
  }

  async start(): Promise<void> {
    await this.consumer.start();
    await this.ephemeral?.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.consumer.stop(), this.ephemeral?.stop()]);
  }

  /** Runs `work` once the transaction before it is done. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** The queue's state, once any pending transaction has gone through. */
  async settled(): Promise<QueueState> {
    const { db } = this.options;
    const id = this.service.id;
    const state = await queueState(db, id);
    if (state.pending === undefined) return state;
    const { pending } = state;
    await this.send(pending.txnId, pending.body);
    await markDelivered(db, id, pending.position, pending.ephemeral);
    return { lastTxnId: pending.txnId, deliveredPosition: pending.position, ...((pending.ephemeral ?? state.ephemeral) ? { ephemeral: pending.ephemeral ?? state.ephemeral! } : {}) };
  }

  /** Stores a transaction, sends it until taken, then marks what it covers delivered. */
  async deliver(state: QueueState, body: string, position: number, ephemeral?: EphemeralPositions): Promise<void> {
    const { db } = this.options;
    const txnId = state.lastTxnId + 1;
    // Stored before it is sent: a retry sends the same transaction.
    await savePending(db, this.service.id, txnId, body, position, ephemeral);
    await this.send(txnId, body);
    await markDelivered(db, this.service.id, position, ephemeral);
  }

  private async handle(rows: readonly TimelineRow[]): Promise<void> {
    const { reader } = this.options;
    // 1. A transaction left pending (a failure, a restart) goes first, as it was.
    const state = await this.settled();
    const fresh = rows.filter((r) => r.position > state.deliveredPosition);
    if (fresh.length === 0) return;
    // 2. The batch's events the service is interested in, in order.
    const stored = await reader.streamedEvents(fresh.map((r) => r.nid));
    const chosen = [];
    for (const row of fresh) {
      const e = stored.get(row.nid);
      if (e === undefined) continue;
      const facts = { roomId: e.roomId, type: e.type, sender: e.sender, stateKey: e.stateKey, content: e.pdu.content };
      if (await this.interest.interested(facts)) chosen.push(e);
      this.interest.observe(facts);
    }
    const last = fresh[fresh.length - 1]!.position;
    if (chosen.length === 0) return;
    // 3. One transaction.
    const events = await reader.clientEvents(chosen, { now: (this.options.now ?? Date.now)() });
    await this.deliver(state, JSON.stringify({ events }), last);
  }

  /** Typing, receipts, presence and to-device messages in (from, upTo], as one transaction when there are any. */
  async handleEphemeral(upTo: EphemeralPositions, typingRooms: readonly string[]): Promise<{ reached: EphemeralPositions; more: boolean }> {
    const state = await this.settled();
    // Read past in memory, so that rows of no interest are not read again; what was stored is the floor.
    const stored = state.ephemeral;
    const known = this.ephemeralRead;
    const from =
      stored && known
        ? { receipts: Math.max(known.receipts, stored.receipts), presence: Math.max(known.presence, stored.presence), to_device: Math.max(known.to_device, stored.to_device) }
        : (stored ?? known ?? upTo);
    const batch = await collectEphemeral(this.options.ephemeral, this.options.services, this.service, this.interest, from, upTo, typingRooms);
    if (batch.ephemeral.length === 0 && batch.toDevice.length === 0) {
      this.ephemeralRead = batch.reached;
      return batch;
    }
    const body: JsonObject = { events: [] };
    if (batch.ephemeral.length > 0) {
      body['ephemeral'] = batch.ephemeral;
      body['de.sorunome.msc2409.ephemeral'] = batch.ephemeral;
    }
    if (batch.toDevice.length > 0) body['de.sorunome.msc2409.to_device'] = batch.toDevice;
    await this.deliver(state, JSON.stringify(body), state.deliveredPosition, batch.reached);
    this.ephemeralRead = batch.reached;
    return batch;
  }

  /** Where the ephemeral streams stand now (a service seen for the first time starts there). */
  initialEphemeral(): Promise<EphemeralPositions> {
    return this.exclusive(async () => {
      const { db, bus } = this.options;
      const state = await queueState(db, this.service.id);
      if (state.ephemeral !== undefined) return state.ephemeral;
      const now = bus.current();
      const positions = { receipts: now.receipts, presence: now.presence, to_device: now.to_device };
      // (With a transaction pending, its own positions, or these, are recorded once it goes.)
      if (state.pending === undefined) await markDelivered(db, this.service.id, state.deliveredPosition, positions);
      else this.ephemeralRead = positions;
      return positions;
    });
  }

  /** PUTs the transaction until the service takes it; throws (to be retried) otherwise. */
  private async send(txnId: number, body: string): Promise<void> {
    let res: ServiceAnswer;
    try {
      res = await this.api.request('PUT', `transactions/${txnId}`, { body });
    } catch (err) {
      this.failedTransactions++;
      throw new DeliveryError(`application service ${this.service.id} could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
    let refusal: string | undefined;
    if (res.unrouted) refusal = `application service ${this.service.id} has no transactions endpoint under /_chat or /_matrix`;
    else if (res.status < 200 || res.status >= 300) refusal = `application service ${this.service.id} answered ${res.status} to transaction ${txnId}`;
    if (refusal !== undefined) {
      this.failedTransactions++;
      throw new DeliveryError(refusal);
    }
  }

  get log(): AppServicePusherOptions['log'] {
    return this.options.log;
  }

  get bus(): StreamBus {
    return this.options.bus;
  }
}

/**
 * A service's ephemeral side: woken by the bus on typing, receipts, presence and to-device
 * changes, it reads what came since it was last delivered (after GATHER_MS, so that a burst
 * goes together) and sends it; failures pause, doubling, and try again.
 */
class EphemeralPass {
  private readonly unlisten: (() => void)[] = [];
  private readonly typingRooms = new Set<string>();
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly queue: ServiceQueue) {}

  async start(): Promise<void> {
    const { bus } = this.queue;
    this.unlisten.push(
      bus.listen('typing', (change) => {
        for (const roomId of change.roomIds ?? []) this.typingRooms.add(roomId);
        this.schedule();
      }),
    );
    for (const stream of ['receipts', 'presence', 'to_device'] as const) this.unlisten.push(bus.listen(stream, () => this.schedule()));
    // What was missed while the server was down goes at once.
    await this.queue.initialEphemeral();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unlisten) u();
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) this.schedule();
    });
  }

  private async run(): Promise<void> {
    await this.pause(GATHER_MS);
    this.again = false;
    while (!this.stopped) {
      const now = this.queue.bus.current();
      const upTo = { receipts: now.receipts, presence: now.presence, to_device: now.to_device };
      const rooms = [...this.typingRooms];
      this.typingRooms.clear();
      try {
        const { more } = await this.queue.exclusive(() => this.queue.handleEphemeral(upTo, rooms));
        this.failures = 0;
        if (!more) return;
      } catch (err) {
        for (const r of rooms) this.typingRooms.add(r);
        this.failures++;
        const { minMs, maxMs } = this.queue.retry;
        const delay = Math.min(maxMs, minMs * 2 ** (this.failures - 1));
        this.queue.log.warn('application service ephemeral delivery failed', { service: this.queue.service.id, err: String(err), retryInMs: delay });
        await this.pause(delay);
      }
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      };
      this.timer = setTimeout(() => this.wake?.(), ms);
    });
  }
}

export class AppServicePusher {
  private readonly queues = new Map<string, ServiceQueue>();

  constructor(private readonly options: AppServicePusherOptions) {}

  /** Starts a queue for every service with a url; a service seen for the first time starts at what is committed now. */
  async start(): Promise<void> {
    const now = this.options.bus.current().events;
    for (const service of this.options.services.all) {
      if (service.url === null) continue;
      const queue = new ServiceQueue(this.options, { ...service, url: service.url }, now);
      this.queues.set(service.id, queue);
      await queue.start();
    }
  }

  /** Events up to this position have been handled for the service (for tests and metrics). */
  position(serviceId: string): number | undefined {
    return this.queues.get(serviceId)?.consumer.position;
  }

  /** Per service with a url: events behind the bus's position, and transactions it did not take. */
  stats(): { service: string; eventsBehind: number; failedTransactions: number }[] {
    const now = this.options.bus.current().events;
    return [...this.queues.values()].map((q) => ({
      service: q.service.id,
      eventsBehind: Math.max(0, now - q.consumer.position),
      failedTransactions: q.failedTransactions,
    }));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.stop()));
  }
}
