// A durable stream consumer: works through one stream's rows in position order and remembers, in
// `stream_consumers`, how far it got, so that after a restart it reads on from there. The federation
// sender (one consumer per destination), application services and pushers are built on it.
//
// How it runs:
// - start() reads the stored position (recording `startAfter` for a consumer seen for the first
//   time), then catches up from the database: `read(position, batchSize)` until a short batch.
// - Then it sleeps until the bus notifies a position above its own on its stream, and reads again
//   (after `gatherMs`, when set, so that what is committed meanwhile comes in the same batch).
//   The rows are the truth, the notification only says when to look (bus.ts): a change committed
//   while it reads marks it to read once more before sleeping, so nothing notified is left waiting.
// - Each batch is handed to `handle`; once that resolves, the batch's last position is stored.
//   Delivery is at least once: a batch handled but not yet stored (a crash, a failed store) comes
//   again, so handlers must tolerate seeing a row twice.
// - A failing read, handler or store is logged and the same batch retried after a pause that
//   doubles up to `retry.maxMs`; the consumer never skips a row.
// - stop() lets the batch in flight finish (and its position be stored) and returns.
// One instance runs per name at a time.

import type { Kysely } from 'kysely';
import type { Schema } from '../storage/schema.js';
import { claimConsumerPosition, saveConsumerPosition } from '../storage/streams.js';
import type { StreamBus } from './bus.js';
import type { PersistentStream } from './positions.js';

/** A unit of a stream; rows sharing a position are one unit (read returns them together). */
export interface StreamRow {
  readonly position: number;
}

export interface StreamConsumerOptions<Row extends StreamRow> {
  /** The key of the stored position; stays the same across restarts. */
  readonly name: string;
  /** The stream the rows come from: its notifications wake the consumer. */
  readonly stream: PersistentStream;
  readonly db: Kysely<Schema>;
  readonly bus: StreamBus;
  /** At most `limit` rows with positions above `after`, in ascending order of distinct positions. */
  read(after: number, limit: number): Promise<readonly Row[]>;
  /** Handles a batch (ascending positions). Throwing retries the same batch later. */
  handle(rows: readonly Row[]): Promise<void>;
  /** Where a consumer without a stored position starts: after this position (default 0, the beginning). */
  readonly startAfter?: number;
  /** Rows per batch (default 100). */
  readonly batchSize?: number;
  /** Pauses after failures, doubling from `minMs` to at most `maxMs` (default 100 ms to 60 s). */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  /**
   * After a notification woke it, how long to wait before reading (default 0): rows committed
   * meanwhile join the batch. The federation sender's queues, one per destination, would otherwise
   * each pay a transaction per event under load.
   */
  readonly gatherMs?: number;
  /** Where failures are reported (the server's Log fits). */
  readonly log: { warn(message: string, details?: object): void };
  readonly now?: () => number;
}

const DEFAULT_BATCH = 100;
const DEFAULT_RETRY = { minMs: 100, maxMs: 60_000 };

type State = 'new' | 'running' | 'stopping' | 'stopped';

export class StreamConsumer<Row extends StreamRow> {
  private state: State = 'new';
  private stored = 0;
  private starting: Promise<void> | undefined;
  private loop: Promise<void> | undefined;
  private unlisten: (() => void) | undefined;
  /** A notification above the stored position came since the current read began. */
  private notified = false;
  /** Ends the current sleep: waiting for a notification, or pausing after a failure. */
  private wake: (() => void) | undefined;
  private sleepingForNotification = false;

  constructor(private readonly options: StreamConsumerOptions<Row>) {}

  /** Every row up to this position has been handled and the position stored. */
  get position(): number {
    return this.stored;
  }

  /** True while it has caught up and waits for a notification (for metrics and tests). */
  get idle(): boolean {
    return this.sleepingForNotification;
  }

  /** Reads the stored position and starts working; resolves once running. */
  async start(): Promise<void> {
    if (this.state !== 'new' || this.starting) throw new Error(`stream consumer ${this.options.name} already started`);
    this.starting = this.begin();
    await this.starting;
  }

  private async begin(): Promise<void> {
    const { name, stream, bus } = this.options;
    // Listen first: a change committed while the position is read is then not slept through.
    this.unlisten = bus.listen(stream, (change) => {
      if (change.position <= this.stored) return;
      this.notified = true;
      if (this.sleepingForNotification) this.wake?.();
    });
    try {
      const claimed = await claimConsumerPosition(this.options.db, name, stream, this.options.startAfter ?? 0, this.now());
      if (claimed.stream !== stream) throw new Error(`stream consumer ${name} is recorded for stream ${claimed.stream}, not ${stream}`);
      this.stored = claimed.position;
    } catch (err) {
      this.unlisten();
      this.state = 'stopped';
      throw err;
    }
    if (this.state !== 'new') return; // stopped while starting
    this.state = 'running';
    this.loop = this.run();
  }

  /** Ends a pause after failures, or a wait, so that the consumer reads and tries again now. */
  poke(): void {
    this.notified = true;
    this.wake?.();
  }

  /** Stops after the batch in flight (whose position is then stored); resolves when stopped. */
  async stop(): Promise<void> {
    if (this.state === 'new' && !this.starting) {
      this.state = 'stopped';
      return;
    }
    if (this.state === 'new' || this.state === 'running') this.state = 'stopping';
    await this.starting?.catch(() => {});
    this.unlisten?.();
    this.wake?.();
    await this.loop;
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    const { name, stream, read, handle, db, log } = this.options;
    const batchSize = this.options.batchSize ?? DEFAULT_BATCH;
    const retry = this.options.retry ?? DEFAULT_RETRY;
    let failures = 0;
    while (this.state === 'running') {
      this.notified = false;
      let full: boolean;
      try {
        const rows = await read(this.stored, batchSize);
        checkOrder(rows, this.stored, name);
        if (rows.length > 0) {
          await handle(rows);
          const last = rows[rows.length - 1]!.position;
          await saveConsumerPosition(db, name, last, this.now());
          this.stored = last;
        }
        full = rows.length >= batchSize;
        failures = 0;
      } catch (err) {
        failures++;
        const pauseMs = Math.min(retry.maxMs, retry.minMs * 2 ** Math.min(failures - 1, 30));
        log.warn('stream consumer failed; retrying the batch', { consumer: name, stream, position: this.stored, attempt: failures, retryInMs: pauseMs, error: String(err) });
        await this.sleep(pauseMs);
        continue;
      }
      if (full) continue;
      if (!this.notified) await this.sleep(undefined);
      // Woken (or notified while handling): what is committed in the next moment comes along.
      const gather = this.options.gatherMs ?? 0;
      if (gather > 0 && this.state === 'running') await this.pause(gather);
    }
  }

  /** Sleeps `ms`, or until notified when undefined; a stop ends either. */
  private sleep(ms: number | undefined): Promise<void> {
    if (this.state !== 'running') return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        this.sleepingForNotification = false;
        this.wake = undefined;
        resolve();
      };
      if (ms !== undefined) timer = setTimeout(done, ms);
      this.sleepingForNotification = ms === undefined;
      this.wake = done;
    });
  }

  /** Waits `ms` whatever is notified meanwhile; a stop or a poke ends it. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

/** A read must return distinct ascending positions above the stored one, or rows would be skipped. */
function checkOrder(rows: readonly StreamRow[], after: number, name: string): void {
  let previous = after;
  for (const row of rows) {
    if (!(row.position > previous)) throw new Error(`stream consumer ${name}: read returned position ${row.position} after ${previous}`);
    previous = row.position;
  }
}
