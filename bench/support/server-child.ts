// Helpers shared by the benchmarks that run the server as a child process.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';

export const root = new URL('../..', import.meta.url).pathname;

/** dist/ is fresh when every source file has a compiled file at least as new. */
export function distIsFresh(): boolean {
  const src = join(root, 'src');
  let any = false;
  for (const entry of readdirSync(src, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const built = join(root, 'dist', relative(src, file).replace(/\.ts$/, '.js'));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(file).mtimeMs) return false;
    any = true;
  }
  return any;
}

/**
 * The server's entry script: dist/cli.js (what `npm start` runs), built first when older than the
 * sources. Under tsx the server would hold some 50 MB more (the loader's thread and source
 * maps), so tsx is only the fallback when the build cannot be made.
 */
export function serverScript(entry?: string): { script: string; how: string } {
  if (entry !== undefined) return { script: entry, how: relative(root, entry) };
  const dist = join(root, 'dist/cli.js');
  if (distIsFresh()) return { script: dist, how: 'dist/cli.js' };
  console.log('dist/ is older than src/: building it (npm run build) ...');
  const build = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (distIsFresh()) {
    const errors = (build.stdout.match(/error TS\d+/g) ?? []).length;
    return { script: dist, how: `dist/cli.js, built now${errors > 0 ? ` (the compiler reported ${errors} type errors)` : ''}` };
  }
  console.log(`  the build failed (${build.stderr || build.stdout}); running src/cli.ts through tsx instead`);
  return { script: join(root, 'src/cli.ts'), how: 'src/cli.ts via tsx (peak RSS about 50 MB higher than built)' };
}

function startScriptWords(): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  return (pkg.scripts?.['start'] ?? '').split(/\s+/);
}

/** The node options `npm start` gives the server (`... exec node --flag ... dist/cli.js serve`). */
export function startScriptNodeFlags(): string[] {
  const words = startScriptWords();
  const flags: string[] = [];
  for (let i = words.indexOf('node') + 1; i > 0 && i < words.length && words[i]!.startsWith('-'); i++) flags.push(words[i]!);
  return flags;
}

/** The variables `npm start` sets for the server (`NAME=value ... exec node ...`). */
function startScriptVariables(): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const word of startScriptWords()) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word);
    if (!match) break;
    vars[match[1]!] = match[2]!;
  }
  return vars;
}

/** A server's environment: the start script's variables, unless this process sets them (to measure another value). */
export function startScriptEnv(): NodeJS.ProcessEnv {
  return { ...startScriptVariables(), ...process.env };
}

/**
 * Writes the benchmarks' configuration into `dataDir` and returns its path: server name
 * bench.test, registration open, no rate limiting, cheap password hashing (accounts are only set
 * up, not measured), logs at info (requests are not logged).
 */
export function writeBenchConfig(dataDir: string, connectionString: string): string {
  const configPath = join(dataDir, 'hearth.yaml');
  const config = {
    version: 2,
    global: { server_name: 'bench.test', data_dir: dataDir, database: { connection_string: connectionString } },
    listen: { http: '127.0.0.1:0' },
    client_api: { registration_disabled: false, rate_limiting: { enabled: false } },
    user_api: { bcrypt_cost: 4 },
    logging: [{ type: 'std', level: 'info' }],
  };
  // BENCH_CONFIG: JSON merged over the above, to measure a setting, e.g.
  // BENCH_CONFIG='{"sync_api":{"search":{"enabled":false}}}'.
  const extra = process.env['BENCH_CONFIG'];
  writeFileSync(configPath, stringify(extra === undefined ? config : merged(config, JSON.parse(extra) as unknown)));
  return configPath;
}

function merged(base: unknown, over: unknown): unknown {
  if (typeof base !== 'object' || base === null || Array.isArray(base) || typeof over !== 'object' || over === null || Array.isArray(over)) return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = merged(out[k], v);
  return out;
}

/** A /proc/<pid>/status field, in kB (VmHWM: peak RSS; VmRSS: RSS now). */
export function procStatusKb(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : NaN;
}

/** CPU time (user and system) a process has used, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Waits until the process has been idle (under 10% of a core for a second: background work such
 * as the push-rule pass over what was just sent is done), at most `maxMs`; the ms waited.
 */
export async function waitForIdle(pid: number, maxMs = 120_000): Promise<number> {
  const start = performance.now();
  let before = cpuMs(pid);
  while (performance.now() - start < maxMs) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = cpuMs(pid);
    if (now - before < 100) break;
    before = now;
  }
  return performance.now() - start;
}

export interface LaunchOptions {
  /** The configuration file the server is started with. */
  readonly configPath: string;
  /** Another build's entry script (default: dist/cli.js, see serverScript). */
  readonly entry?: string;
  /** Node options after the start script's own. */
  readonly nodeFlags?: readonly string[];
  /** A folder for the server's CPU profile. */
  readonly cpuProfDir?: string;
  /** A file that keeps the server's output (default: drained and dropped). */
  readonly serverLog?: string;
}

export interface LaunchedServer {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`, from the server's "Listening on" line. */
  readonly baseUrl: string;
  /** What ran: node options and entry script. */
  readonly how: string;
}

/** `hearth serve` as `npm start` runs it, resolved once it listens. */
export async function launchServer(options: LaunchOptions): Promise<LaunchedServer> {
  const { script, how } = serverScript(options.entry);
  const entry = script.endsWith('.ts') ? ['--import', 'tsx', script] : [script];
  const profile = options.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`];
  return launchListening([...profile, ...entry, 'serve', '--config', options.configPath], how, options);
}

/** The floor server's one access token. */
export const FLOOR_TOKEN = 'floor-token';

/**
 * The floor server (bench/support/floor-server.ts) with the start script's node options and
 * environment, resolved once it listens.
 */
export function launchFloor(options: Omit<LaunchOptions, 'configPath' | 'entry'>): Promise<LaunchedServer> {
  const script = join(root, 'bench/support/floor-server.ts');
  return launchListening(['--import', 'tsx', script], `--import tsx ${relative(root, script)}`, options);
}

/** Node with the start script's options and variables running `args`, once it prints "Listening on <url>". */
async function launchListening(args: readonly string[], how: string, options: Omit<LaunchOptions, 'configPath'>): Promise<LaunchedServer> {
  const flags = [...startScriptNodeFlags(), ...(options.nodeFlags ?? [])];
  const env = startScriptEnv();
  const child = spawn(process.execPath, [...flags, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const baseUrl = await new Promise<string>((resolveUrl, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = /Listening on (http:\/\/\S+)/.exec(seen);
      if (match) {
        child.stdout!.off('data', onData);
        // Keep draining its output; keep it only when asked to.
        if (options.serverLog === undefined) child.stdout!.resume();
        else child.stdout!.pipe(createWriteStream(options.serverLog));
        resolveUrl(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${seen}`)));
  });
  const vars = Object.keys(startScriptVariables()).map((name) => `${name}=${env[name]} `).join('');
  return { child, baseUrl, how: `${vars}${flags.length > 0 ? `node ${flags.join(' ')} ${how}` : how}` };
}

/** SIGTERM, resolved once the child has exited. */
export function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

/** The p-th percentile of an ascending list. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}
