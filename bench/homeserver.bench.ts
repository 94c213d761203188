// Runs the homeserver benchmarks one after another, each with a server of its own (so each peak
// RSS is its own server's): HTTP sends (server.bench.ts), then sync (sync.bench.ts). `npm run bench`.
// Arguments are not passed on; run a benchmark file directly to give it options.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const benches = ['server', 'sync'];
let failed = false;
for (const name of benches) {
  const file = new URL(`./${name}.bench.ts`, import.meta.url).pathname;
  process.stdout.write(`\n== ${name} ==\n`);
  if (!existsSync(file)) {
    process.stdout.write(`(bench/${name}.bench.ts is not there yet)\n`);
    continue;
  }
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
