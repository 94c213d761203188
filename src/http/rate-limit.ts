// Per-client rate limiting: each client (user, or address when unauthenticated) has `threshold`
// slots; a request holds one for `cooloffMs`. With every slot held, the request is refused and
// told when the oldest slot frees.

export interface RateLimitOptions {
  readonly threshold: number;
  readonly cooloffMs: number;
  readonly exemptUserIds?: Iterable<string>;
  readonly now?: () => number;
}

/** Above this many tracked clients, idle ones are swept on the next request. */
const SWEEP_AT = 10_000;

export class RateLimiter {
  private readonly clients = new Map<string, number[]>();
  private readonly exempt: ReadonlySet<string>;
  private readonly now: () => number;

  constructor(private readonly options: RateLimitOptions) {
    this.exempt = new Set(options.exemptUserIds ?? []);
    this.now = options.now ?? Date.now;
  }

  isExempt(userId: string): boolean {
    return this.exempt.has(userId);
  }

  /** Takes a slot for `key`: 0 when granted, else the milliseconds until one frees. */
  take(key: string): number {
    const now = this.now();
    const since = now - this.options.cooloffMs;
    let times = this.clients.get(key);
    if (times === undefined) {
      if (this.clients.size >= SWEEP_AT) this.sweep(since);
      this.clients.set(key, (times = []));
    }
    while (times.length > 0 && times[0]! <= since) times.shift();
    if (times.length >= this.options.threshold) return Math.max(1, times[0]! + this.options.cooloffMs - now);
    times.push(now);
    return 0;
  }

  private sweep(since: number): void {
    for (const [key, times] of this.clients) {
      if (times.length === 0 || times[times.length - 1]! <= since) this.clients.delete(key);
    }
  }
}
