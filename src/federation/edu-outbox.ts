// EDUs that must not be lost: to-device messages (m.direct_to_device), device-list and
// signing-key updates of this server's users. Each is queued in `federation_outbound_edus` inside
// the transaction that made it, so a committed change is never left untold, and removed once its
// destination accepted the transaction carrying it. One queue per destination, oldest first, at
// most 100 EDUs per transaction; failures back off like the PDU sender's (2 s doubling to 5 min)
// and never give up, except on a 400 or 413, the destination's word that it will never take that
// batch. A destination that contacts us is tried again at once. Queues left at a restart are
// taken up again at start.
//
// A transaction's id is made from the first and last queued ids: a retry of the same EDUs keeps
// it, so a destination that took a transaction whose answer was lost answers the retry without
// doing it twice. A retry that took in EDUs queued meanwhile gets a new id; the receiver dedupes
// to-device messages by message id, and device-list updates said twice do no harm.

import type { Kysely } from 'kysely';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import { deleteOutboundEdus, destinationsWithEdus, insertOutboundEdus, selectOutboundEdus, type QueuedEdu } from '../storage/federation/outbound-edus.js';
import type { Schema } from '../storage/schema.js';
import type { RemoteToDevice } from '../users/to-device.js';
import type { FederationRequest, FederationResponse } from './client.js';
import { MAX_EDUS } from './transactions.js';

/** Content per transaction beyond which a batch is cut (well under common 1 MiB body limits). */
const MAX_BATCH_BYTES = 512 * 1024;
const DEFAULT_RETRY = { minMs: 2000, maxMs: 300_000 };

export interface EduOutboxOptions {
  readonly db: Kysely<Schema>;
  readonly serverName: string;
  readonly client: { request(req: FederationRequest): Promise<FederationResponse> };
  readonly log: { warn(message: string, details?: object): void };
  /** Pauses between attempts, doubling (default 2 s to 5 min). */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  readonly now?: () => number;
}

interface Queue {
  running: Promise<void> | undefined;
  /** EDUs were queued while it ran: read once more before stopping. */
  again: boolean;
  failures: number;
  /** Ends the pause after a failure. */
  wake: (() => void) | undefined;
}

export class EduOutbox {
  private readonly queues = new Map<string, Queue>();
  private readonly now: () => number;
  private stopped = false;
  private failedTransactions = 0;

  constructor(private readonly options: EduOutboxOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Queues an EDU for these destinations, within the caller's transaction (this server is left out). */
  async queue(trx: Kysely<Schema>, destinations: readonly string[], eduType: string, content: JsonObject): Promise<void> {
    const others = [...new Set(destinations)].filter((d) => d !== this.options.serverName);
    await insertOutboundEdus(trx, others, eduType, content, this.now());
  }

  /** What was queued for these destinations is committed: send it (a queue pausing after failures keeps its pause). */
  send(destinations: Iterable<string>): void {
    for (const d of destinations) if (d !== this.options.serverName) this.drain(d);
  }

  /** Destinations with EDUs being sent or waiting, and transactions that failed so far (for metrics). */
  stats(): { pendingDestinations: number; failedTransactions: number } {
    return { pendingDestinations: this.queues.size, failedTransactions: this.failedTransactions };
  }

  /** Takes up the queues a previous run left. */
  async start(): Promise<void> {
    this.send(await destinationsWithEdus(this.options.db));
  }

  /** The destination contacted us: a queue pausing after failures tries again now. */
  contacted(origin: string): void {
    const q = this.queues.get(origin);
    if (q?.wake === undefined) return;
    q.failures = 0;
    q.wake();
  }

  /** Lets the transactions in flight finish; what is left stays queued for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const q of this.queues.values()) q.wake?.();
    await Promise.all([...this.queues.values()].map((q) => q.running));
  }

  private drain(destination: string): void {
    if (this.stopped) return;
    let q = this.queues.get(destination);
    if (q === undefined) this.queues.set(destination, (q = { running: undefined, again: false, failures: 0, wake: undefined }));
    if (q.running !== undefined) {
      q.again = true;
      return;
    }
    const queue = q;
    queue.running = this.run(destination, queue).finally(() => {
      queue.running = undefined;
      if (queue.again && !this.stopped) this.drain(destination);
      else if (!queue.again) this.queues.delete(destination);
    });
  }

  private async run(destination: string, q: Queue): Promise<void> {
    const retry = this.options.retry ?? DEFAULT_RETRY;
    while (!this.stopped) {
      q.again = false;
      try {
        const batch = cut(await selectOutboundEdus(this.options.db, destination, MAX_EDUS));
        if (batch.length === 0) return;
        await this.sendBatch(destination, batch);
        q.failures = 0;
      } catch (err) {
        q.failures++;
        this.failedTransactions++;
        const pauseMs = Math.min(retry.maxMs, retry.minMs * 2 ** Math.min(q.failures - 1, 30));
        this.options.log.warn('queued EDUs could not be sent; retrying', { destination, attempt: q.failures, retryInMs: pauseMs, error: String(err) });
        await this.pause(q, pauseMs);
      }
    }
  }

  private async sendBatch(destination: string, batch: readonly QueuedEdu[]): Promise<void> {
    const first = batch[0]!.id;
    const last = batch[batch.length - 1]!.id;
    const txnId = `q${first}-${last}`;
    const edus = batch.map((e) => ({ edu_type: e.eduType, content: JSON.parse(e.content) as JsonValue }));
    const res = await this.options.client.request({
      destination,
      method: 'PUT',
      path: `/federation/v1/send/${txnId}`,
      body: { origin: this.options.serverName, origin_server_ts: this.now(), pdus: [], edus },
    });
    if (res.status === 400 || res.status === 413) {
      const errcode = isJsonObject(res.body) ? res.body['errcode'] : undefined;
      this.options.log.warn('queued EDUs refused by their destination; dropped', { destination, status: res.status, errcode, count: batch.length });
    } else if (res.status !== 200) {
      throw new Error(`${destination} answered ${res.status} to transaction ${txnId}`);
    }
    await deleteOutboundEdus(this.options.db, destination, last);
  }

  private pause(q: Queue, ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        q.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      q.wake = done;
    });
  }
}

/** The longest prefix of the batch within the byte budget (at least one EDU). */
function cut(batch: QueuedEdu[]): QueuedEdu[] {
  let bytes = 0;
  for (let i = 0; i < batch.length; i++) {
    bytes += batch[i]!.content.length;
    if (bytes > MAX_BATCH_BYTES && i > 0) return batch.slice(0, i);
  }
  return batch;
}

/** The to-device service's port: one m.direct_to_device EDU per destination and send. */
export function toDeviceOutbound(outbox: Pick<EduOutbox, 'queue' | 'send'>): RemoteToDevice {
  return {
    queue: (trx, destination, m) =>
      outbox.queue(trx, [destination], 'm.direct_to_device', { sender: m.sender, type: m.type, message_id: m.messageId, messages: m.messages }),
    send: (destinations) => outbox.send(destinations),
  };
}
