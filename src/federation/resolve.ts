// Server-name resolution (server-server API, "Resolving server names"): where to connect for a
// server name, which certificate name to expect and which Host header to send. Every DNS question
// (SRV, and A/AAAA of every host we connect to, well-known fetches included) goes through one
// injectable resolver, so that tests can run their own DNS server and no lookup waits on the
// libuv thread pool that getaddrinfo would share with every other destination.

import { promises as dnsPromises } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { type LookupFunction, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Agent } from 'undici';
import { loadUndici } from './undici.js';
import { HearthError } from '../protocol/errors.js';
import { isServerName, parseServerNameParts } from '../protocol/ids.js';

/** Which names a server is reached by: the spec's `chat` or the Matrix ecosystem's `matrix`. */
export type Naming = 'chat' | 'matrix';

export type FederationFailure = 'resolution' | 'connect' | 'tls' | 'timeout' | 'status' | 'response';

/** Reaching another server failed; the message names the server and the step that failed. */
export class FederationError extends HearthError {
  constructor(
    readonly destination: string,
    readonly reason: FederationFailure,
    detail: string,
    cause?: unknown,
  ) {
    super(reason === 'timeout' ? 504 : 502, 'M_UNKNOWN', `${destination}: ${detail}`);
    this.name = 'FederationError';
    if (cause !== undefined) this.cause = cause;
  }
}

/** The part of `dns.promises.Resolver` used here. */
export interface DnsResolver {
  resolve4(hostname: string): Promise<string[]>;
  resolve6(hostname: string): Promise<string[]>;
  resolveSrv(hostname: string): Promise<{ name: string; port: number; priority: number; weight: number }[]>;
}

export interface ResolvedServer {
  /** Where to connect: an IP address (IPv6 without brackets) or a hostname to look up. */
  readonly host: string;
  readonly port: number;
  /** The name the certificate must hold, sent as SNI unless it is an IP address. */
  readonly tlsServerName: string;
  readonly hostHeader: string;
  /**
   * Which step decided. `well-known` and `srv` mean records published under the naming asked for,
   * i.e. evidence that the server uses that naming.
   */
  readonly via: 'ip-literal' | 'explicit-port' | 'well-known' | 'srv' | 'default-port';
}

export interface ResolverOptions {
  readonly dns?: DnsResolver;
  /** PEM certificates trusted in addition to the system's roots. */
  readonly ca?: string | readonly string[];
  readonly disableTlsValidation?: boolean;
  /** Port of well-known fetches; 443 except in tests, which cannot count on binding it. */
  readonly wellKnownPort?: number;
  readonly wellKnownTimeoutMs?: number;
  readonly now?: () => number;
}

export const DEFAULT_FEDERATION_PORT = 8448;

const HOUR = 3600_000;
const WELL_KNOWN_DEFAULT_TTL = 24 * HOUR;
const WELL_KNOWN_MAX_TTL = 48 * HOUR;
// A max-age of 0 would otherwise cost a well-known fetch before every request.
const WELL_KNOWN_MIN_TTL = 5 * 60_000;
const WELL_KNOWN_FAILURE_TTL = HOUR;
// After a valid answer, a failure is more likely an outage than a removed delegation: ask again soon.
const WELL_KNOWN_DOWN_TTL = 2 * 60_000;
const WELL_KNOWN_MAX_BYTES = 50 * 1024;
const WELL_KNOWN_MAX_REDIRECTS = 5;
const SRV_TTL = 10 * 60_000;
// Caches hold one entry per remote server; the bound only guards against a flood of names.
const MAX_CACHE_ENTRIES = 50_000;

const SRV_LABELS: Record<Naming, readonly string[]> = {
  chat: ['_chat._tcp'],
  // `_matrix-fed` is the IANA-registered name; `_matrix` is deprecated but still published widely.
  matrix: ['_matrix-fed._tcp', '_matrix._tcp'],
};

function isMissing(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ENOTFOUND' || code === 'ENODATA';
}

/** AAAA and A addresses of `hostname`, IPv6 first; ENOTFOUND when it has neither. */
export async function lookupAddresses(dns: DnsResolver, hostname: string, family = 0): Promise<LookupAddress[]> {
  const ipFamily = isIP(hostname);
  if (ipFamily !== 0) return [{ address: hostname, family: ipFamily }];
  const ask = (f: 4 | 6) =>
    (family === 0 || family === f ? (f === 4 ? dns.resolve4(hostname) : dns.resolve6(hostname)) : Promise.resolve([])).then(
      (list) => list.map((address) => ({ address, family: f })),
    );
  const [v6, v4] = await Promise.allSettled([ask(6), ask(4)]);
  const found = [...(v6.status === 'fulfilled' ? v6.value : []), ...(v4.status === 'fulfilled' ? v4.value : [])];
  if (found.length > 0) return found;
  const failure = [v6, v4].find((r) => r.status === 'rejected' && !isMissing(r.reason));
  if (failure?.status === 'rejected') throw failure.reason;
  throw Object.assign(new Error(`${hostname}: no AAAA or A record`), { code: 'ENOTFOUND', hostname });
}

/** A `lookup` for net/tls connections that asks `dns` instead of getaddrinfo. */
export function dnsLookup(dns: DnsResolver): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    lookupAddresses(dns, hostname, options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0))
      .then((list) => {
        if (options.all) callback(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, ''));
  };
}

/** The trust list: the system's roots plus `extra`, or undefined for the defaults alone. */
export function trustedCas(extra: string | readonly string[] | undefined): string[] | undefined {
  if (extra === undefined) return undefined;
  return [...rootCertificates, ...(typeof extra === 'string' ? [extra] : extra)];
}

/** Seconds of `max-age`, 0 for no-store/no-cache, undefined when the header says neither. */
function cacheSeconds(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value === undefined) return undefined;
  const directives = value.toLowerCase().split(',').map((d) => d.trim());
  if (directives.includes('no-store') || directives.includes('no-cache')) return 0;
  for (const d of directives) {
    const m = /^max-age\s*=\s*"?(\d+)"?$/.exec(d);
    if (m) return Number(m[1]);
  }
  return undefined;
}

interface Cached<T> {
  readonly value: T;
  readonly expires: number;
}

/** Insert-ordered map with a size bound: the oldest entry goes first. */
function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_CACHE_ENTRIES) map.delete(map.keys().next().value as K);
}

type SrvTarget = { name: string; port: number };

/** RFC 2782 order: lowest priority first, then a weighted random pick among equals. */
function pickSrv(records: { name: string; port: number; priority: number; weight: number }[]): SrvTarget | undefined {
  // A target of "." means the service is deliberately not offered.
  const usable = records.filter((r) => r.name !== '' && r.name !== '.');
  if (usable.length === 0) return undefined;
  const best = Math.min(...usable.map((r) => r.priority));
  const group = usable.filter((r) => r.priority === best);
  const total = group.reduce((sum, r) => sum + r.weight, 0);
  let roll = Math.random() * total;
  for (const r of group) {
    roll -= r.weight;
    if (roll < 0) return { name: r.name, port: r.port };
  }
  return { name: group[0]!.name, port: group[0]!.port };
}

export class ServerResolver {
  readonly dns: DnsResolver;
  /** The lookup every connection to another server must use. */
  readonly lookup: LookupFunction;
  /** For well-known fetches, made on the first one. */
  private agent: Promise<Agent> | undefined;
  private readonly agentOptions: ConstructorParameters<typeof Agent>[0];
  private readonly now: () => number;
  private readonly wellKnownPort: number;
  private readonly wellKnownTimeoutMs: number;
  private readonly wellKnownCache = new Map<string, Cached<string | null>>();
  private readonly wellKnownPending = new Map<string, Promise<string | null>>();
  private readonly hadValidWellKnown = new Map<string, true>();
  private readonly srvCache = new Map<string, Cached<SrvTarget | undefined>>();

  constructor(options: ResolverOptions = {}) {
    this.dns = options.dns ?? new dnsPromises.Resolver({ timeout: 5000, tries: 2 });
    this.lookup = dnsLookup(this.dns);
    this.now = options.now ?? Date.now;
    this.wellKnownPort = options.wellKnownPort ?? 443;
    this.wellKnownTimeoutMs = options.wellKnownTimeoutMs ?? 10_000;
    const ca = trustedCas(options.ca);
    this.agentOptions = {
      connect: {
        lookup: this.lookup,
        rejectUnauthorized: !options.disableTlsValidation,
        ...(ca ? { ca } : {}),
      },
      keepAliveTimeout: 10_000,
    };
  }

  /** Where to reach `serverName` under `naming`. Throws FederationError (resolution) on failure. */
  async resolve(serverName: string, naming: Naming): Promise<ResolvedServer> {
    if (!isServerName(serverName)) throw new FederationError(serverName, 'resolution', 'not a valid server name');
    const name = parseServerNameParts(serverName);
    // 1. IP literal: the port given or 8448; the certificate must hold the IP address.
    if (name.kind !== 'dns') {
      return { host: name.host, port: name.port ?? DEFAULT_FEDERATION_PORT, tlsServerName: name.host, hostHeader: serverName, via: 'ip-literal' };
    }
    // 2. Hostname with an explicit port.
    if (name.port !== undefined) {
      return { host: name.host, port: name.port, tlsServerName: name.host, hostHeader: serverName, via: 'explicit-port' };
    }
    // 3. Well-known delegation; from here the delegated name speaks for the server.
    const delegated = await this.wellKnown(name.host, naming);
    if (delegated !== null) {
      const d = parseServerNameParts(delegated);
      if (d.kind !== 'dns') {
        return { host: d.host, port: d.port ?? DEFAULT_FEDERATION_PORT, tlsServerName: d.host, hostHeader: delegated, via: 'well-known' };
      }
      if (d.port !== undefined) {
        return { host: d.host, port: d.port, tlsServerName: d.host, hostHeader: delegated, via: 'well-known' };
      }
      const srv = await this.srv(d.host, naming, serverName);
      return srv
        ? { host: srv.name, port: srv.port, tlsServerName: d.host, hostHeader: d.host, via: 'well-known' }
        : { host: d.host, port: DEFAULT_FEDERATION_PORT, tlsServerName: d.host, hostHeader: d.host, via: 'well-known' };
    }
    // 4. SRV: the target must still prove itself with a certificate for the original hostname.
    const srv = await this.srv(name.host, naming, serverName);
    if (srv) return { host: srv.name, port: srv.port, tlsServerName: name.host, hostHeader: name.host, via: 'srv' };
    // 5. The hostname itself on 8448.
    return { host: name.host, port: DEFAULT_FEDERATION_PORT, tlsServerName: name.host, hostHeader: name.host, via: 'default-port' };
  }

  /** Forgets every cached well-known and SRV answer. */
  clearCaches(): void {
    this.wellKnownCache.clear();
    this.hadValidWellKnown.clear();
    this.srvCache.clear();
  }

  async close(): Promise<void> {
    await (await this.agent)?.close();
  }

  private async srv(hostname: string, naming: Naming, destination: string): Promise<SrvTarget | undefined> {
    for (const label of SRV_LABELS[naming]) {
      const key = `${label}.${hostname}`;
      const cached = this.srvCache.get(key);
      let target: SrvTarget | undefined;
      if (cached && cached.expires > this.now()) target = cached.value;
      else {
        try {
          target = pickSrv(await this.dns.resolveSrv(key));
        } catch (err) {
          // A missing record is an answer; a failing DNS server is not, so nothing is cached.
          if (!isMissing(err)) {
            throw new FederationError(destination, 'resolution', `SRV lookup of ${key} failed: ${errorText(err)}`, err);
          }
        }
        remember(this.srvCache, key, { value: target, expires: this.now() + SRV_TTL });
      }
      if (target) return target;
    }
    return undefined;
  }

  /** The delegated server name from well-known, or null when there is none (cached either way). */
  private wellKnown(hostname: string, naming: Naming): Promise<string | null> {
    const key = `${naming} ${hostname}`;
    const cached = this.wellKnownCache.get(key);
    if (cached && cached.expires > this.now()) return Promise.resolve(cached.value);
    // Concurrent requests to a new server share one fetch.
    let pending = this.wellKnownPending.get(key);
    if (!pending) {
      pending = this.fetchWellKnown(hostname, naming).then(({ delegated, ttl }) => {
        this.wellKnownPending.delete(key);
        if (delegated !== null) remember(this.hadValidWellKnown, key, true);
        const failedTtl = this.hadValidWellKnown.has(key) ? WELL_KNOWN_DOWN_TTL : WELL_KNOWN_FAILURE_TTL;
        remember(this.wellKnownCache, key, { value: delegated, expires: this.now() + (delegated === null ? failedTtl : ttl) });
        return delegated;
      });
      this.wellKnownPending.set(key, pending);
    }
    return pending;
  }

  /** Never throws: any failure means "no well-known". */
  private async fetchWellKnown(hostname: string, naming: Naming): Promise<{ delegated: string | null; ttl: number }> {
    const none = { delegated: null, ttl: 0 };
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.wellKnownTimeoutMs);
    try {
      const port = this.wellKnownPort === 443 ? '' : `:${this.wellKnownPort}`;
      let url = new URL(`https://${hostname}${port}/.well-known/${naming}/server`);
      this.agent ??= loadUndici().then(({ Agent }) => new Agent(this.agentOptions));
      const agent = await this.agent;
      for (let hop = 0; ; hop++) {
        const res = await agent.request({
          origin: url.origin,
          path: url.pathname + url.search,
          method: 'GET',
          signal: controller.signal,
          headersTimeout: this.wellKnownTimeoutMs,
          bodyTimeout: this.wellKnownTimeoutMs,
        });
        const location = res.headers.location;
        if ([301, 302, 303, 307, 308].includes(res.statusCode) && typeof location === 'string') {
          await res.body.dump();
          if (hop >= WELL_KNOWN_MAX_REDIRECTS) return none;
          url = new URL(location, url);
          // A downgrade to plain HTTP would let anyone on the path choose the delegation.
          if (url.protocol !== 'https:') return none;
          continue;
        }
        if (res.statusCode !== 200) {
          await res.body.dump();
          return none;
        }
        const text = await readLimited(res.body, WELL_KNOWN_MAX_BYTES);
        if (text === undefined) return none;
        let doc: unknown;
        try {
          doc = JSON.parse(text);
        } catch {
          return none;
        }
        const delegated = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)['m.server'] : undefined;
        if (!isServerName(delegated)) return none;
        const seconds = cacheSeconds(res.headers['cache-control']);
        const ttl = seconds === undefined ? WELL_KNOWN_DEFAULT_TTL : Math.min(Math.max(seconds * 1000, WELL_KNOWN_MIN_TTL), WELL_KNOWN_MAX_TTL);
        return { delegated, ttl };
      }
    } catch {
      return none;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The body as UTF-8 text, or undefined (and the stream destroyed) past `limit` bytes. */
export async function readLimited(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
  }
  return String(err);
}
