// Prometheus metrics of one server: a registry of its own (several servers may share a process),
// counters the HTTP app and the database feed as requests and statements finish, and gauges and
// counts read from the services only when scraped, so the hot paths pay for no bookkeeping of ours.

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the services tell when scraped; each is read through a small function wired in context.ts. */
export interface MetricsSources {
  /** Sync long-polls waiting for news. */
  readonly syncWaiting: () => number;
  readonly rooms: () => {
    readonly busyRooms: number;
    readonly queuedTasks: number;
    readonly writerQueue: number;
    readonly persisted: Readonly<Record<string, number>>;
  };
  /** Lookups that found what they asked for in memory, and that did not, by cache. */
  readonly caches: () => Readonly<Record<string, { readonly hits: number; readonly misses: number }>>;
  /** Undefined when federation is disabled. */
  readonly federation?: () => {
    readonly pdu: FederationQueueStats;
    readonly edu: FederationQueueStats;
  };
  readonly appServices: () => readonly { readonly service: string; readonly eventsBehind: number; readonly failedTransactions: number }[];
  /** The push-rule pass and the pushers. */
  readonly push?: () => { readonly eventsBehind: number; readonly sent: number; readonly failures: number };
  /** PostgreSQL only: the pool's connections. */
  readonly databasePool?: () => { readonly total: number; readonly idle: number; readonly waiting: number };
  /** A SQLite file only: its write-ahead log's checkpoints (storage/wal-checkpointer.ts). */
  readonly sqliteCheckpoints?: () => { readonly passes: number; readonly restarts: number; readonly loopSeconds: number; readonly logPages: number };
}

interface FederationQueueStats {
  readonly pendingDestinations: number;
  readonly failedTransactions: number;
}

/** The label of requests no route matched: one series, however many paths are probed. */
export const UNMATCHED_ROUTE = 'unmatched';

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const QUERY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/** A route as the labels name it: its API and its path after the prefix and version (`/rooms/:roomId/send/:eventType/:txnId`). */
export interface RouteTemplate {
  readonly api: string;
  readonly path: string;
}

interface RequestSeries {
  readonly requests: Counter.Internal;
  readonly latency: Histogram.Internal<string>;
}

export class ServerMetrics {
  readonly registry = new Registry();
  private sources: MetricsSources | undefined;
  private readonly requests: Counter<'api' | 'route' | 'method' | 'status'>;
  private readonly latency: Histogram<'api' | 'route' | 'method'>;
  /** Label children by route, then method and status, made once per series rather than per request. */
  private readonly series = new Map<RouteTemplate | undefined, Map<string, RequestSeries>>();
  private readonly queryLatency: Histogram.Internal<string>;
  private readonly queryFailures: Counter.Internal;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'hearth_' });
    this.requests = new Counter({
      name: 'hearth_http_requests_total',
      help: 'HTTP requests answered, by API, route template, method and status.',
      labelNames: ['api', 'route', 'method', 'status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'hearth_http_request_duration_seconds',
      help: 'Time from request to reply, by API, route template and method.',
      labelNames: ['api', 'route', 'method'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.queryLatency = new Histogram({
      name: 'hearth_db_query_duration_seconds',
      help: 'Database statement latency.',
      buckets: QUERY_BUCKETS,
      registers,
    }).labels();
    this.queryFailures = new Counter({ name: 'hearth_db_query_failures_total', help: 'Database statements that failed.', registers }).labels();

    const self = this;
    const gauge = (name: string, help: string, read: (s: MetricsSources) => number | undefined) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const value = self.sources === undefined ? undefined : read(self.sources);
          if (value !== undefined) this.set(value);
        },
      });
    gauge('hearth_sync_waiting', 'Sync long-polls waiting for news.', (s) => s.syncWaiting());
    gauge('hearth_room_queue_busy_rooms', "Rooms whose ordered queue has tasks running or waiting.", (s) => s.rooms().busyRooms);
    gauge('hearth_room_queue_tasks', "Tasks running or waiting in the rooms' ordered queues.", (s) => s.rooms().queuedTasks);
    gauge('hearth_event_writer_queue', "Write jobs waiting for the event writer's next transaction.", (s) => s.rooms().writerQueue);

    // Counts kept as plain numbers by the services, published as counters when scraped.
    const counted = <L extends string>(name: string, help: string, labelNames: readonly L[], read: (s: MetricsSources) => Iterable<[Record<L, string>, number]>) =>
      new Counter<L>({
        name,
        help,
        labelNames,
        registers,
        collect() {
          if (self.sources === undefined) return;
          this.reset();
          for (const [labels, value] of read(self.sources)) this.inc(labels as never, value);
        },
      });
    counted('hearth_events_persisted_total', 'Events committed by this process, by status.', ['status'], (s) =>
      Object.entries(s.rooms().persisted).map(([status, n]) => [{ status }, n]),
    );
    counted('hearth_cache_hits_total', 'Cache lookups that found the entry.', ['cache'], (s) => Object.entries(s.caches()).map(([cache, c]) => [{ cache }, c.hits]));
    counted('hearth_cache_misses_total', 'Cache lookups that did not.', ['cache'], (s) => Object.entries(s.caches()).map(([cache, c]) => [{ cache }, c.misses]));
    new Gauge({
      name: 'hearth_federation_pending_destinations',
      help: 'Destinations with PDUs or EDUs not yet delivered.',
      labelNames: ['kind'],
      registers,
      collect() {
        const f = self.sources?.federation?.();
        if (f === undefined) return;
        this.set({ kind: 'pdu' }, f.pdu.pendingDestinations);
        this.set({ kind: 'edu' }, f.edu.pendingDestinations);
      },
    });
    counted('hearth_federation_send_failures_total', 'Transactions to other servers that failed.', ['kind'], (s) => {
      const f = s.federation?.();
      return f === undefined ? [] : [[{ kind: 'pdu' }, f.pdu.failedTransactions], [{ kind: 'edu' }, f.edu.failedTransactions]];
    });
    new Gauge({
      name: 'hearth_appservice_events_behind',
      help: "Events an application service has yet to be sent: the events stream's position minus its own.",
      labelNames: ['service'],
      registers,
      collect() {
        if (self.sources === undefined) return;
        this.reset();
        for (const s of self.sources.appServices()) this.set({ service: s.service }, s.eventsBehind);
      },
    });
    counted('hearth_appservice_failures_total', 'Transactions an application service did not take.', ['service'], (s) =>
      s.appServices().map((a) => [{ service: a.service }, a.failedTransactions]),
    );
    new Gauge({
      name: 'hearth_push_events_behind',
      help: "Events the push-rule pass has yet to evaluate: the events stream's position minus its own.",
      registers,
      collect() {
        const p = self.sources?.push?.();
        if (p !== undefined) this.set(p.eventsBehind);
      },
    });
    counted('hearth_push_sent_total', 'Notifications push gateways took.', [], (s) => {
      const p = s.push?.();
      return p === undefined ? [] : [[{}, p.sent]];
    });
    counted('hearth_push_failures_total', 'Attempts to reach a push gateway that failed.', [], (s) => {
      const p = s.push?.();
      return p === undefined ? [] : [[{}, p.failures]];
    });
  }

  /** Where the scrape-time figures come from; until set, only the request and database figures are given. */
  watch(sources: MetricsSources): void {
    this.sources = sources;
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const counter = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    // Each backend's figures only where it runs (on SQLite, a pool gauge of 0 would read as a pool
    // with no connections).
    const checkpoints = sources.sqliteCheckpoints;
    if (checkpoints !== undefined) {
      counter('hearth_sqlite_checkpoints_total', "Checkpoint passes over SQLite's write-ahead log.", () => checkpoints().passes);
      counter('hearth_sqlite_checkpoint_restarts_total', 'Times the write-ahead log was made to start over.', () => checkpoints().restarts);
      counter('hearth_sqlite_checkpoint_loop_seconds_total', 'Time checkpoint passes held the event loop.', () => checkpoints().loopSeconds);
      gauge('hearth_sqlite_wal_pages', 'Pages in the write-ahead log at the last checkpoint pass.', () => checkpoints().logPages);
    }
    const pool = sources.databasePool;
    if (pool === undefined) return;
    gauge('hearth_db_pool_connections', 'PostgreSQL pool connections open.', () => pool().total);
    gauge('hearth_db_pool_idle', 'PostgreSQL pool connections idle.', () => pool().idle);
    gauge('hearth_db_pool_waiting', 'Queries waiting for a PostgreSQL pool connection.', () => pool().waiting);
  }

  /** A reply was sent: `route` is the route that answered, undefined when none matched. */
  observeRequest(route: RouteTemplate | undefined, method: string, status: number, seconds: number): void {
    let byRoute = this.series.get(route);
    if (byRoute === undefined) this.series.set(route, (byRoute = new Map()));
    const key = `${method} ${status}`;
    let s = byRoute.get(key);
    if (s === undefined) {
      const api = route?.api ?? UNMATCHED_ROUTE;
      const path = route?.path ?? UNMATCHED_ROUTE;
      s = { requests: this.requests.labels(api, path, method, String(status)), latency: this.latency.labels(api, path, method) };
      byRoute.set(key, s);
    }
    s.requests.inc();
    s.latency.observe(seconds);
  }

  /** A database statement finished. */
  observeQuery(milliseconds: number, failed: boolean): void {
    this.queryLatency.observe(milliseconds / 1000);
    if (failed) this.queryFailures.inc();
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    this.sources = undefined;
    this.registry.clear();
  }
}
