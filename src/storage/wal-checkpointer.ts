// Checkpoints of a SQLite database's write-ahead log, off the event loop. SQLite's automatic
// checkpoint runs inside the commit that crosses its threshold, on the connection that committed:
// for the server's one connection that is the event loop, held for the copy and two fsyncs (over
// 100 ms on a busy disk). Instead the main connection's automatic checkpoint is off, and a worker
// thread with a connection of its own runs PASSIVE checkpoints on a timer: they copy committed
// pages into the database file while the main connection goes on reading and writing.
//
// The log starts over from its beginning when a write begins with every frame copied. Under
// light load that happens by itself; under steady writes a PASSIVE checkpoint never catches the
// log's end. So once the log passes RESTART_AFTER_PAGES, the checkpointer holds the main
// connection (queries wait for it asynchronously; the event loop runs on) while the worker copies
// the last frames (RESTART mode) and then writes first into the new log itself, so that the fsync
// of the new log's header is the worker's too. The log stays bounded, about as long as before.
//
// Durability is SQLite's own: every commit is in the log, and a crash at any point leaves a
// database that the next open recovers.

import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Kysely } from 'kysely';

/** How often the worker checkpoints while the log has frames it has not copied. */
const CHECKPOINT_INTERVAL_MS = 500;
/** Log length (pages) past which the log is made to start over. */
export const RESTART_AFTER_PAGES = 10_000;
/** What the main connection does by itself should the worker fail (SQLite's default). */
const FALLBACK_AUTOCHECKPOINT_PAGES = 1000;

type Mode = 'PASSIVE' | 'RESTART';

/** `PRAGMA wal_checkpoint` answers: busy, frames in the log, frames copied into the database. */
interface CheckpointResult {
  readonly busy: number;
  readonly log: number;
  readonly checkpointed: number;
}

// The worker's code, evaluated as a script: plain JavaScript that loads better-sqlite3 from the
// path the server resolved, so it runs alike from the sources and from a build.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
// Short: while the log starts over, the main connection's queries wait for this one.
db.pragma('busy_timeout = 100');
db.pragma('wal_autocheckpoint = 0');
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -500');
parentPort.on('message', (mode) => {
  if (mode === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const result = db.pragma('wal_checkpoint(' + mode + ')')[0];
    // Every frame copied and no reader on the log: this write starts the log over (rewriting
    // the header page's user_version unchanged), and its fsync of the new log header is ours.
    // Another process writing first is as good: it starts the log over itself.
    if (mode === 'RESTART' && result.busy === 0) {
      try {
        db.pragma('user_version = ' + db.pragma('user_version', { simple: true }));
      } catch (err) {
        if (err.code !== 'SQLITE_BUSY') throw err;
      }
    }
    parentPort.postMessage({ result });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
});
`;

export class WalCheckpointer {
  private worker: Worker | undefined;
  /** Resolves once the worker has exited. */
  private exited: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private pending: { resolve(r: CheckpointResult): void; reject(err: Error): void } | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private failed = false;

  /**
   * `path`: the database file; `db`: the Kysely instance on the main connection (held while the
   * log starts over); `fallback`: turns the main connection's own checkpoints back on.
   */
  constructor(
    private readonly path: string,
    private readonly db: Kysely<unknown>,
    private readonly fallback: (pages: number) => void,
  ) {
    // The worker starts with the first tick: a short-lived command that closes its database sooner
    // never starts one.
    this.timer = setInterval(() => this.tick(), CHECKPOINT_INTERVAL_MS).unref();
  }

  private tick(): void {
    if (this.running !== undefined || this.closed) return;
    this.running = this.checkpoint()
      .catch((err: unknown) => this.fail(err))
      .finally(() => (this.running = undefined));
  }

  private async checkpoint(): Promise<void> {
    let r = await this.run('PASSIVE');
    // Once more straight away, copying only what was written meanwhile: the log may have
    // started over by itself since.
    if (r.log >= RESTART_AFTER_PAGES) r = await this.run('PASSIVE');
    if (r.log < RESTART_AFTER_PAGES || this.closed) return;
    // Hold the main connection (queries queue behind us, the event loop runs on) while the worker
    // copies what was written since the pass above and starts the log over.
    await this.db.connection().execute(async () => {
      if (!this.closed) await this.run('RESTART');
    });
  }

  private run(mode: Mode): Promise<CheckpointResult> {
    const worker = (this.worker ??= this.startWorker());
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      // Kept alive only while it has work, so that it never holds the process open by itself.
      worker.ref();
      worker.postMessage(mode);
    });
  }

  private startWorker(): Worker {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path: this.path } });
    worker.unref();
    this.exited = new Promise((done) => worker.once('exit', () => done()));
    worker.on('message', (m: { result?: CheckpointResult; error?: string }) => {
      const p = this.pending;
      this.pending = undefined;
      worker.unref();
      if (m.result !== undefined) p?.resolve(m.result);
      else p?.reject(new Error(m.error));
    });
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', () => {
      this.pending?.reject(new Error('the checkpoint worker exited'));
      this.pending = undefined;
    });
    return worker;
  }

  // A worker that cannot checkpoint (it failed to start, or its connection broke) hands the job
  // back to the main connection, so the log stays bounded either way.
  private fail(_err: unknown): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    clearInterval(this.timer);
    void this.worker?.terminate();
    this.worker = undefined;
    this.fallback(FALLBACK_AUTOCHECKPOINT_PAGES);
  }

  /** Stops the timer, lets a checkpoint in progress finish, and closes the worker's connection. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.running;
    this.worker?.ref();
    this.worker?.postMessage('close');
    this.worker = undefined;
    await this.exited;
  }
}
