// Checkpoints of a SQLite database's write-ahead log, off the event loop's critical path.
// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on the
// connection that committed: for the server's one connection that is the event loop, held for the
// copy and two fsyncs (over 100 ms on a busy disk). Instead the main connection's automatic
// checkpoint is off, and two side connections of this process checkpoint on a timer:
//
// 1. `pin` opens a read transaction: a snapshot at the log's current end. A checkpoint copies no
//    frame past a reader's snapshot, and SQLite fsyncs the database file only after a checkpoint
//    that copied the whole log; with writes arriving meanwhile, a pinned checkpoint is partial.
// 2. The log and the database file are fsynced on libuv's thread pool, while the loop runs on.
// 3. `ckpt` runs a PASSIVE checkpoint, with SQLite's own fsyncs: of the log (only what was written
//    since step 2 is left to write) and, when the pass copied everything, of the database file
//    (only what this pass copied). The copy itself is page-cache writes of the pages that changed.
// 4. The pin is released.
//
// The log starts over from its beginning when a write begins with every frame copied. Under
// light load that happens by itself; under steady writes a PASSIVE checkpoint never catches the
// log's end. So once the log passes RESTART_AFTER_PAGES, the checkpointer holds the main
// connection (queries wait for it asynchronously; the event loop runs on), flushes again, copies
// the last frames (RESTART mode) and writes first into the new log itself.
//
// Durability is SQLite's own: every checkpoint runs with synchronous = NORMAL and makes its own
// fsyncs, so the database file is synced before the log may start over; the earlier fsyncs only
// move most of that work off the event loop. A crash at any point leaves a database that the next
// open recovers. Unlike a worker thread, this costs no second JavaScript heap (about 10 MB).

import { open, type FileHandle } from 'node:fs/promises';
import BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';

/** How often a checkpoint runs while the log has frames not yet copied (or may have). */
const CHECKPOINT_INTERVAL_MS = 500;
/** Log length (pages) past which the log is made to start over. */
export const RESTART_AFTER_PAGES = 10_000;
/** What the main connection does by itself should the side connections fail (SQLite's default). */
const FALLBACK_AUTOCHECKPOINT_PAGES = 1000;

type Mode = 'PASSIVE' | 'RESTART';

/** What the checkpointer has done since the database was opened (for metrics). */
export interface CheckpointStats {
  /** Passes that ran (an idle database runs none). */
  readonly passes: number;
  /** Times the log was made to start over. */
  readonly restarts: number;
  /** Time the passes held the event loop: the copy and SQLite's fsyncs of what the flush left. */
  readonly loopSeconds: number;
  /** Pages in the log at the last pass. */
  readonly logPages: number;
}

/** `PRAGMA wal_checkpoint` answers: busy, frames in the log, frames copied into the database. */
interface CheckpointResult {
  readonly busy: number;
  readonly log: number;
  readonly checkpointed: number;
}

async function openBoth(first: string, second: string): Promise<FileHandle[]> {
  const a = await open(first, 'r+');
  try {
    return [a, await open(second, 'r+')];
  } catch (err) {
    await a.close();
    throw err;
  }
}

/** The checkpointer's own connections and file handles. */
class SideConnections {
  private readonly ckpt: BetterSqlite3.Database;
  private readonly pinning: BetterSqlite3.Database;
  private readonly pinRead: BetterSqlite3.Statement;
  private pinned = false;
  private files: FileHandle[] | undefined;
  private flushFailed = false;
  private dataVersion: unknown;

  constructor(private readonly path: string) {
    this.ckpt = new BetterSqlite3(path, { fileMustExist: true });
    // Never wait on the event loop: a checkpoint that meets a reader or writer tries again later.
    this.ckpt.pragma('busy_timeout = 0');
    this.ckpt.pragma('wal_autocheckpoint = 0');
    this.ckpt.pragma('synchronous = NORMAL');
    this.ckpt.pragma('cache_size = -64');
    this.pinning = new BetterSqlite3(path, { fileMustExist: true, readonly: true });
    this.pinning.pragma('cache_size = -64');
    this.pinRead = this.pinning.prepare('select count(*) from sqlite_schema');
  }

  /** Whether another connection committed since the last call (the first call says yes). */
  written(): boolean {
    const version = this.ckpt.pragma('data_version', { simple: true });
    const changed = version !== this.dataVersion;
    this.dataVersion = version;
    return changed;
  }

  /** Starts a read transaction at the log's current end. */
  pin(): void {
    if (this.pinned) return;
    this.pinning.exec('begin');
    this.pinRead.get();
    this.pinned = true;
  }

  unpin(): void {
    if (!this.pinned) return;
    this.pinned = false;
    this.pinning.exec('commit');
  }

  /**
   * fsyncs the log and the database file on the thread pool. Only a head start: should it fail
   * (a system that refuses fsync on these handles), SQLite's own fsyncs still do the work.
   */
  async flush(): Promise<void> {
    if (this.flushFailed) return;
    try {
      // Opened for writing, which some systems require to fsync; nothing is written through them.
      this.files ??= await openBoth(this.path, `${this.path}-wal`);
      await Promise.all(this.files.map((f) => f.sync()));
    } catch {
      this.flushFailed = true;
    }
  }

  run(mode: Mode): CheckpointResult {
    return (this.ckpt.pragma(`wal_checkpoint(${mode})`) as CheckpointResult[])[0]!;
  }

  /**
   * A write into a log whose frames are all copied starts it over (rewriting the header page's
   * user_version unchanged). Another connection writing first is as good.
   */
  startOver(): void {
    try {
      this.ckpt.pragma(`user_version = ${this.ckpt.pragma('user_version', { simple: true }) as number}`);
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    }
  }

  async close(): Promise<void> {
    this.unpin();
    const files = this.files ?? [];
    this.files = undefined;
    await Promise.all(files.map((f) => f.close()));
    this.pinning.close();
    this.ckpt.close();
  }
}

export class WalCheckpointer {
  private side: SideConnections | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private failed = false;
  /** The last pass copied the whole log. */
  private caughtUp = false;
  private counts = { passes: 0, restarts: 0, loopSeconds: 0, logPages: 0 };

  /**
   * `path`: the database file; `db`: the Kysely instance on the main connection (held while the
   * log starts over); `fallback`: turns the main connection's own checkpoints back on.
   */
  constructor(
    private readonly path: string,
    private readonly db: Kysely<unknown>,
    private readonly fallback: (pages: number) => void,
  ) {
    // The side connections open with the first tick: a short-lived command that closes its
    // database sooner never opens them.
    this.timer = setInterval(() => this.tick(), CHECKPOINT_INTERVAL_MS).unref();
  }

  private tick(): void {
    if (this.running !== undefined || this.closed) return;
    this.running = this.checkpoint()
      .catch((err: unknown) => this.fail(err))
      .finally(() => (this.running = undefined));
  }

  private async checkpoint(): Promise<void> {
    const side = (this.side ??= new SideConnections(this.path));
    // An idle database costs nothing: no fsync, no pass.
    if (!side.written() && this.caughtUp) return;
    let r: CheckpointResult;
    side.pin();
    try {
      await side.flush();
      if (this.closed) return;
      r = this.onLoop(() => side.run('PASSIVE'));
    } finally {
      side.unpin();
    }
    this.counts.passes++;
    this.counts.logPages = Math.max(0, r.log);
    this.caughtUp = r.checkpointed >= r.log;
    if (r.log < RESTART_AFTER_PAGES || this.closed) return;
    // Most of what the log gained since goes to disk before the main connection is held ...
    await side.flush();
    await this.db.connection().execute(async () => {
      if (this.closed) return;
      // ... the rest while it is: then the copy of the last frames and the start over are short.
      await side.flush();
      if (this.closed) return;
      this.onLoop(() => {
        if (side.run('RESTART').busy === 0) {
          side.startOver();
          this.counts.restarts++;
        }
      });
    });
  }

  /** Runs `work` (which holds the event loop) and counts its time. */
  private onLoop<T>(work: () => T): T {
    const started = performance.now();
    try {
      return work();
    } finally {
      this.counts.loopSeconds += (performance.now() - started) / 1000;
    }
  }

  stats(): CheckpointStats {
    return { ...this.counts };
  }

  // Side connections that cannot checkpoint (the file went away, a connection broke) hand the job
  // back to the main connection, so the log stays bounded either way.
  private fail(_err: unknown): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    clearInterval(this.timer);
    const side = this.side;
    this.side = undefined;
    void side?.close().catch(() => {});
    this.fallback(FALLBACK_AUTOCHECKPOINT_PAGES);
  }

  /** Stops the timer, lets a checkpoint in progress finish, and closes the side connections. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.running;
    const side = this.side;
    this.side = undefined;
    await side?.close();
  }
}
