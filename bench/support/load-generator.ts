// The load generator of the sustained-load benchmark, run as a process of its own (so it neither
// shares a CPU thread with the server nor with the bench that samples the server): it sends
// messages into one room over `connections` concurrent keep-alive connections for `seconds`, and
// reports every request's latency.
//
// Started by bench/sustained.bench.ts with fork(); it receives one LoadOrder and answers with one
// LoadReport over the IPC channel, then exits.

import { rawClient } from './http-clients.js';

export interface LoadOrder {
  readonly baseUrl: string;
  readonly token: string;
  readonly roomId: string;
  readonly connections: number;
  readonly seconds: number;
  /** Prefix of the transaction ids, so that no two runs reuse one. */
  readonly txnPrefix: string;
}

export interface LoadReport {
  /** Requests that completed with 200 within the duration. */
  readonly completed: number;
  readonly failed: number;
  /** The first failure, if any. */
  readonly failure?: string;
  /** The measured duration, in seconds (from the first request to the last answer). */
  readonly seconds: number;
  /** Latencies of the completed requests, in milliseconds, ascending. */
  readonly latenciesMs: number[];
}

async function run(order: LoadOrder): Promise<LoadReport> {
  const call = rawClient(order.baseUrl);
  const path = `/_matrix/client/v3/rooms/${encodeURIComponent(order.roomId)}/send/m.room.message/`;
  const latencies: number[] = [];
  let failed = 0;
  let failure: string | undefined;
  let txn = 0;
  const start = performance.now();
  const end = start + order.seconds * 1000;
  await Promise.all(
    Array.from({ length: order.connections }, async () => {
      while (performance.now() < end) {
        const n = txn++;
        const t = performance.now();
        try {
          const r = await call('PUT', `${path}${order.txnPrefix}${n}`, order.token, { msgtype: 'm.text', body: `message ${n} with a little text in it` });
          if (r.status === 200) latencies.push(performance.now() - t);
          else {
            failed++;
            failure ??= `HTTP ${r.status} ${JSON.stringify(r.body)}`;
          }
        } catch (err) {
          failed++;
          failure ??= String(err);
        }
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { completed: latencies.length, failed, ...(failure !== undefined ? { failure } : {}), seconds, latenciesMs: latencies };
}

process.once('message', (order: LoadOrder) => {
  void run(order).then((report) => process.send!(report, undefined, {}, () => process.exit(0)));
});
