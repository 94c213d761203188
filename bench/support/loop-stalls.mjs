// Preloaded into the server by the sustained-load benchmark (`node --import <this file>`): watches
// the event loop for stalls. A timer due every 5 ms measures how late it fires; lateness over 50 ms
// counts as a stall; the longest garbage-collection pause is noted too. On SIGUSR2 it writes what it saw since the last signal, as one JSON object,
// to the file HEARTH_BENCH_LOOP_FILE names, and starts afresh. Plain JavaScript, so that it loads
// into the built server without a TypeScript loader.

import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const file = process.env['HEARTH_BENCH_LOOP_FILE'];
if (file !== undefined) {
  const TICK_MS = 5;
  const STALL_MS = 50;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let stalls = 0;
  let worst = 0;
  let expected = performance.now() + TICK_MS;
  const tick = () => {
    const now = performance.now();
    const late = now - expected;
    if (late > STALL_MS) stalls++;
    if (late > worst) worst = late;
    expected = now + TICK_MS;
    setTimeout(tick, TICK_MS).unref();
  };
  setTimeout(tick, TICK_MS).unref();
  // The longest garbage-collection pause, to tell a collector's stall from the others.
  let worstGc = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) worstGc = Math.max(worstGc, e.duration);
  }).observe({ entryTypes: ['gc'] });
  let seq = 0;
  process.on('SIGUSR2', () => {
    seq++;
    writeFileSync(file, JSON.stringify({ seq, stalls, worstMs: worst, worstGcMs: worstGc, p99Ms: histogram.percentile(99) / 1e6 }));
    histogram.reset();
    stalls = 0;
    worst = 0;
    worstGc = 0;
  });
}
