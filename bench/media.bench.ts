// The media repository through HTTP, against `hearth serve` run as `npm start` runs it (built,
// with the start script's node options; SQLite), in a child process whose memory is sampled:
// - upload and download MB/s: 10 files of 20 MB, one at a time, then 4 at once;
// - the server's RSS before and at its peak during one 50 MB upload (it must not grow by the
//   file's size: the upload is streamed to disk);
// - thumbnails/s: a 1,600 × 1,200 JPEG and PNG thumbnailed at 100 distinct sizes each, 10 at once
//   (each size made once, as a new request would).
//
//   npm run bench:media

import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { rawClient } from './support/http-clients.js';
import { register } from './support/accounts.js';
import { launchServer, procStatusKb, stopServer, writeBenchConfig } from './support/server-child.js';

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const row = (what: string, value: string) => console.log(`  ${what.padEnd(52)}  ${value}`);
const MB = 1024 * 1024;

const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-media-'));
const server = await launchServer({ configPath: writeBenchConfig(dataDir, `file:${join(dataDir, 'hearth.db')}`) });
const pid = server.child.pid!;
try {
  const user = await register(rawClient(server.baseUrl), 'uploader');
  const auth = { authorization: `Bearer ${user.token}` };
  const upload = async (data: Uint8Array, type = 'application/octet-stream'): Promise<string> => {
    const res = await fetch(`${server.baseUrl}/_matrix/media/v3/upload`, { method: 'POST', headers: { ...auth, 'content-type': type }, body: data });
    if (res.status !== 200) throw new Error(`upload: HTTP ${res.status} ${await res.text()}`);
    return ((await res.json()) as { content_uri: string }).content_uri.replace(/^mxc:\/\//, '');
  };
  const download = async (id: string): Promise<number> => {
    const res = await fetch(`${server.baseUrl}/_matrix/client/v1/media/download/${id}`, { headers: auth });
    let n = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) n += chunk.length;
    return n;
  };

  console.log(`media repository (${server.how}, SQLite, loopback)`);
  const file = randomBytes(20 * MB);
  for (const lanes of [1, 4]) {
    const count = 10;
    let t = performance.now();
    const ids: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: lanes }, async () => {
      while (next < count) {
        next++;
        ids.push(await upload(file));
      }
    }));
    const up = (performance.now() - t) / 1000;
    t = performance.now();
    let bytes = 0;
    next = 0;
    await Promise.all(Array.from({ length: lanes }, async () => {
      while (next < ids.length) bytes += await download(ids[next++]!);
    }));
    const down = (performance.now() - t) / 1000;
    row(`upload, ${count} × 20 MB, ${lanes} at a time`, `${fmt((count * 20) / up, 0)} MB/s`);
    row(`download, the same, ${lanes} at a time`, `${fmt(bytes / MB / down, 0)} MB/s`);
  }

  const before = procStatusKb(pid, 'VmRSS');
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, procStatusKb(pid, 'VmRSS'))), 10);
  await upload(randomBytes(50 * MB));
  clearInterval(sampler);
  row('server RSS before / peak during a 50 MB upload', `${fmt(before / 1024, 1)} / ${fmt(peak / 1024, 1)} MiB (+${fmt((peak - before) / 1024, 1)} MiB)`);

  const image = sharp({ create: { width: 1600, height: 1200, channels: 3, background: '#3a7' } });
  const images = { jpeg: await image.clone().jpeg().toBuffer(), png: await image.clone().png().toBuffer() };
  for (const [kind, data] of Object.entries(images)) {
    const id = await upload(data, `image/${kind}`);
    const t = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (next < 100) {
        const i = next++;
        const res = await fetch(`${server.baseUrl}/_matrix/client/v1/media/thumbnail/${id}?width=${100 + i}&height=${80 + i}&method=${i % 2 ? 'crop' : 'scale'}`, { headers: auth });
        if (res.status !== 200) throw new Error(`thumbnail: HTTP ${res.status}`);
        await res.arrayBuffer();
      }
    }));
    row(`thumbnails of a 1,600 × 1,200 ${kind.toUpperCase()}, 100 sizes, 10 at once`, `${fmt(100 / ((performance.now() - t) / 1000), 0)} /s`);
  }
  row('server peak RSS (VmHWM)', `${fmt(procStatusKb(pid, 'VmHWM') / 1024, 1)} MiB`);
} finally {
  await stopServer(server.child);
  rmSync(dataDir, { recursive: true, force: true });
}
