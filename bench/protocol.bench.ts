// Runs every protocol benchmark in its own process (so peak-memory figures are each its own),
// one after another: `npm run bench:protocol`.

import { spawnSync } from 'node:child_process';

const benches = ['canonical-json', 'signing', 'state-res'];
let failed = false;
for (const name of benches) {
  const file = new URL(`./protocol/${name}.bench.ts`, import.meta.url).pathname;
  process.stdout.write(`\n== ${name} ==\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
