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
// Paths, naming fallback and authorization: service-api.ts.

import type { Kysely } from 'kysely';
import type { RoomReader } from '../rooms/reader.js';
import { markDelivered, queueState, savePending, timelineAfter, type TimelineRow } from '../storage/appservice/queues.js';
import type { Schema } from '../storage/schema.js';
import type { StreamBus } from '../streams/bus.js';
import { StreamConsumer } from '../streams/consumer.js';
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
      retry: options.retry ?? { minMs: 1000, maxMs: 300_000 },
      log: options.log,
      read: (after, limit) => timelineAfter(options.db, after, limit),
      handle: (rows) => this.handle(rows),
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  }

  private async handle(rows: readonly TimelineRow[]): Promise<void> {
    const { db, reader } = this.options;
    const id = this.service.id;
    let state = await queueState(db, id);
    // 1. A transaction left pending (a failure, a restart) goes first, as it was.
    if (state.pending !== undefined) {
      await this.send(state.pending.txnId, state.pending.body);
      await markDelivered(db, id, state.pending.position);
      state = { lastTxnId: state.pending.txnId, deliveredPosition: state.pending.position };
    }
    const fresh = rows.filter((r) => r.position > state.deliveredPosition);
    if (fresh.length === 0) return;
    // 2. The batch's events the service is interested in, in order.
    const stored = await reader.eventsByNids(fresh.map((r) => r.nid));
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
    // 3. Stored before it is sent: a retry sends the same transaction.
    const events = await reader.clientEvents(chosen, { now: (this.options.now ?? Date.now)() });
    const body = JSON.stringify({ events });
    const txnId = state.lastTxnId + 1;
    await savePending(db, id, txnId, body, last);
    await this.send(txnId, body);
    await markDelivered(db, id, last);
  }

  /** PUTs the transaction until the service takes it; throws (to be retried) otherwise. */
  private async send(txnId: number, body: string): Promise<void> {
    let res: ServiceAnswer;
    try {
      res = await this.api.request('PUT', `transactions/${txnId}`, { body });
    } catch (err) {
      throw new DeliveryError(`application service ${this.service.id} could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (res.unrouted) throw new DeliveryError(`application service ${this.service.id} has no transactions endpoint under /_chat or /_matrix`);
    if (res.status < 200 || res.status >= 300) throw new DeliveryError(`application service ${this.service.id} answered ${res.status} to transaction ${txnId}`);
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
      await queue.consumer.start();
    }
  }

  /** Events up to this position have been handled for the service (for tests and metrics). */
  position(serviceId: string): number | undefined {
    return this.queues.get(serviceId)?.consumer.position;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.consumer.stop()));
  }
}
