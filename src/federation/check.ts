// Federation diagnostics: finds another server the way this one would (well-known, SRV, the
// fallback; both namings), connects with TLS, reads its `/version` and its signing keys, checks
// the keys' signatures, asks it for this server's keys (which it can give only by reaching this
// server), and reports each step with what it found or why it failed. Used by
// `hearth federation-check` and the admin API. It never throws for the remote server's faults:
// they are the report.

import { promises as dnsPromises } from 'node:dns';
import { isIP } from 'node:net';
import { type PeerCertificate, checkServerIdentity, connect as tlsConnect } from 'node:tls';
import type { Agent, Client } from 'undici';
import { loadUndici } from './undici.js';
import { encodeBase64 } from '../protocol/base64.js';
import { isJsonObject } from '../protocol/json.js';
import { isServerName, parseServerNameParts } from '../protocol/ids.js';
import { verifyKeyResponse } from './key-ring.js';
import {
  type DnsResolver,
  type Naming,
  type ResolvedServer,
  ServerResolver,
  dnsLookup,
  errorText,
  lookupAddresses,
  readLimited,
  trustedCas,
} from './resolve.js';

export type CheckStepName = 'server name' | 'well-known' | 'srv' | 'resolution' | 'tls' | 'version' | 'keys' | 'reach back';

export interface CheckStep {
  readonly name: CheckStepName;
  /** The step passed, or was not needed. False when it failed or could not run. */
  readonly ok: boolean;
  /** The step did not run: it does not apply, or a step it depends on failed (then `ok` is false). */
  readonly skipped?: boolean;
  /** What was found. */
  readonly detail: string;
  /** Why the step failed, in plain words. */
  readonly error?: string;
}

export interface FederationReport {
  readonly server_name: string;
  /** Whether federation with the server would work: every step ok. */
  readonly ok: boolean;
  /** The naming this server would use to reach it, once resolution got that far. */
  readonly naming?: Naming;
  readonly steps: readonly CheckStep[];
}

export interface FederationCheckDeps {
  /** `global.protocol_name`: the naming tried first. Default 'chat'. */
  readonly protocolName?: Naming;
  readonly dns?: DnsResolver;
  /** PEM certificates trusted besides the system's roots. */
  readonly ca?: string | readonly string[];
  /** `federation_api.disable_tls_validation`: certificate faults are reported but do not fail. */
  readonly disableTlsValidation?: boolean;
  /** Time limit of each network step; default 10 s. */
  readonly timeoutMs?: number;
  /** Port of well-known fetches; 443 except in tests. */
  readonly wellKnownPort?: number;
  readonly now?: () => number;
  /**
   * This server's name and signing key: the other server is asked for them as a notary, which it
   * can answer only by reaching this server (or from what it fetched before). Without them the
   * step is not run.
   */
  readonly self?: { readonly serverName: string; readonly keyId: string; readonly publicKey: Uint8Array };
}

const ROOT: Record<Naming, string> = { chat: '/_chat', matrix: '/_matrix' };
const SRV_LABELS: Record<Naming, readonly string[]> = { chat: ['_chat._tcp'], matrix: ['_matrix-fed._tcp', '_matrix._tcp'] };
const other = (naming: Naming): Naming => (naming === 'chat' ? 'matrix' : 'chat');
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_REDIRECTS = 5;

const step = (name: CheckStepName, detail: string): CheckStep => ({ name, ok: true, detail });
const failed = (name: CheckStepName, detail: string, error: string): CheckStep => ({ name, ok: false, detail, error });
const skipped = (name: CheckStepName, reason: string): CheckStep => ({ name, ok: false, skipped: true, detail: '', error: `skipped: ${reason}` });
const notNeeded = (name: CheckStepName, detail: string): CheckStep => ({ name, ok: true, skipped: true, detail });

function isMissing(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ENOTFOUND' || code === 'ENODATA';
}

/** `promise`, or a rejection saying `what` took too long. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Checks whether federation with `serverName` would work; see FederationReport. */
export async function federationCheck(serverName: string, deps: FederationCheckDeps = {}): Promise<FederationReport> {
  const run = new Check(serverName, deps);
  try {
    return await run.report();
  } finally {
    await run.close();
  }
}

type WellKnownAnswer = { kind: 'found'; delegated: string } | { kind: 'none' | 'invalid'; reason: string };

interface Found {
  readonly naming: Naming;
  readonly target: ResolvedServer;
  readonly address: string;
}

class Check {
  private readonly preferred: Naming;
  private readonly dns: DnsResolver;
  private readonly ca: string[] | undefined;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly resolver: ServerResolver;
  /** Made when the report starts (undici is loaded on first use). */
  private agent: Agent | undefined;
  private undici: Awaited<ReturnType<typeof loadUndici>> | undefined;
  private readonly steps: CheckStep[] = [];

  constructor(
    private readonly serverName: string,
    private readonly deps: FederationCheckDeps,
  ) {
    this.preferred = deps.protocolName ?? 'chat';
    this.dns = deps.dns ?? new dnsPromises.Resolver({ timeout: 5000, tries: 2 });
    this.ca = trustedCas(deps.ca);
    this.timeoutMs = deps.timeoutMs ?? 10_000;
    this.now = deps.now ?? Date.now;
    // A resolver of its own: a check must not answer from (or fill) the server's caches.
    this.resolver = new ServerResolver({
      dns: this.dns,
      ...(deps.ca !== undefined ? { ca: deps.ca } : {}),
      disableTlsValidation: deps.disableTlsValidation === true,
      ...(deps.wellKnownPort !== undefined ? { wellKnownPort: deps.wellKnownPort } : {}),
      wellKnownTimeoutMs: this.timeoutMs,
      now: this.now,
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.resolver.close(), this.agent?.close()]);
  }

  async report(): Promise<FederationReport> {
    this.undici = await loadUndici();
    this.agent = new this.undici.Agent({
      connect: { lookup: dnsLookup(this.dns), rejectUnauthorized: !this.deps.disableTlsValidation, ...(this.ca ? { ca: this.ca } : {}) },
    });
    const found = await this.discover();
    if (found === undefined) {
      for (const name of ['tls', 'version', 'keys'] as const) this.steps.push(skipped(name, 'the server could not be located'));
    } else if (await this.tls(found)) {
      const client = this.httpClient(found);
      try {
        await this.version(client, found);
        await this.keys(client, found);
        await this.reachBack(client, found);
      } finally {
        await client.close();
      }
    } else {
      for (const name of ['version', 'keys', 'reach back'] as const) this.steps.push(skipped(name, 'no TLS connection to the server'));
    }
    if (found === undefined) this.steps.push(skipped('reach back', 'the server could not be located'));
    return {
      server_name: this.serverName,
      ok: this.steps.every((s) => s.ok),
      ...(found ? { naming: found.naming } : {}),
      steps: this.steps,
    };
  }

  /** The name, well-known, SRV and resolution steps; the place to connect to, or undefined. */
  private async discover(): Promise<Found | undefined> {
    if (!isServerName(this.serverName)) {
      this.steps.push(failed('server name', this.serverName, 'not a valid server name (a hostname or IP address, optionally with :port)'));
      for (const name of ['well-known', 'srv', 'resolution'] as const) this.steps.push(skipped(name, 'no valid server name'));
      return undefined;
    }
    const name = parseServerNameParts(this.serverName);
    if (name.kind !== 'dns' || name.port !== undefined) {
      const why = name.kind !== 'dns' ? 'an IP address' : `an explicit port (${name.port})`;
      this.steps.push(step('server name', `${this.serverName}: ${why}, so no discovery applies`));
      this.steps.push(notNeeded('well-known', `not used: the name has ${why}`));
      this.steps.push(notNeeded('srv', `not used: the name has ${why}`));
    } else {
      this.steps.push(step('server name', `${this.serverName}: a hostname without port, found through well-known, SRV or port 8448`));
      const srvHost = await this.wellKnownStep(name.host);
      if (!(await this.srvStep(srvHost))) {
        this.steps.push(skipped('resolution', 'the SRV lookup failed'));
        return undefined;
      }
    }
    return this.resolutionStep();
  }

  /** Both namings' well-known; returns the hostname whose SRV records count. */
  private async wellKnownStep(host: string): Promise<string | undefined> {
    const parts: string[] = [];
    let srvHost: string | undefined = host;
    let delegatedBy: Naming | undefined;
    for (const naming of [this.preferred, other(this.preferred)]) {
      const answer = await this.fetchWellKnown(host, naming);
      const url = `/.well-known/${naming}/server`;
      if (answer.kind === 'found') {
        parts.push(`${url}: m.server ${answer.delegated}`);
        // The resolver follows the naming it resolves under; the preferred one's delegation wins.
        if (delegatedBy === undefined) {
          delegatedBy = naming;
          const d = parseServerNameParts(answer.delegated);
          srvHost = d.kind === 'dns' && d.port === undefined ? d.host : undefined;
        }
      } else {
        parts.push(`${url}: ${answer.kind === 'none' ? 'none' : 'invalid, ignored'} (${answer.reason})`);
      }
    }
    const summary = delegatedBy === undefined ? 'no delegation' : `delegated under the ${delegatedBy} naming`;
    this.steps.push(step('well-known', `${summary}; ${parts.join('; ')}`));
    return srvHost;
  }

  /** Never throws: any failure is "none" with its reason, as the resolver treats it. */
  private async fetchWellKnown(host: string, naming: Naming): Promise<WellKnownAnswer> {
    const port = this.deps.wellKnownPort === undefined || this.deps.wellKnownPort === 443 ? '' : `:${this.deps.wellKnownPort}`;
    let url = new URL(`https://${host}${port}/.well-known/${naming}/server`);
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      for (let hop = 0; ; hop++) {
        const res = await this.agent!.request({ origin: url.origin, path: url.pathname + url.search, method: 'GET', signal });
        const location = res.headers.location;
        if ([301, 302, 303, 307, 308].includes(res.statusCode) && typeof location === 'string') {
          await res.body.dump();
          if (hop >= MAX_REDIRECTS) return { kind: 'invalid', reason: 'too many redirects' };
          url = new URL(location, url);
          if (url.protocol !== 'https:') return { kind: 'invalid', reason: `redirected to ${url.protocol} (only https counts)` };
          continue;
        }
        if (res.statusCode !== 200) {
          await res.body.dump();
          return { kind: 'none', reason: `answered ${res.statusCode}` };
        }
        const text = await readLimited(res.body, 50 * 1024);
        if (text === undefined) return { kind: 'invalid', reason: 'body over 50 KiB' };
        let doc: unknown;
        try {
          doc = JSON.parse(text);
        } catch {
          return { kind: 'invalid', reason: 'not JSON' };
        }
        const delegated = isJsonObject(doc) ? doc['m.server'] : undefined;
        if (!isServerName(delegated)) return { kind: 'invalid', reason: 'm.server is missing or not a server name' };
        return { kind: 'found', delegated };
      }
    } catch (err) {
      return { kind: 'none', reason: signal.aborted ? `no answer within ${this.timeoutMs} ms` : errorText(err) };
    }
  }

  /** The SRV records of both namings; false when a DNS server failed (rather than said "none"). */
  private async srvStep(host: string | undefined): Promise<boolean> {
    if (host === undefined) {
      this.steps.push(notNeeded('srv', 'not used: the delegated name has an IP address or a port'));
      return true;
    }
    const parts: string[] = [];
    for (const naming of [this.preferred, other(this.preferred)]) {
      for (const label of SRV_LABELS[naming]) {
        const question = `${label}.${host}`;
        try {
          const records = await within(this.dns.resolveSrv(question), this.timeoutMs, `SRV ${question}`);
          const usable = records.filter((r) => r.name !== '' && r.name !== '.');
          parts.push(
            usable.length === 0
              ? `${question}: none`
              : `${question} → ${usable.map((r) => `${r.name}:${r.port} (priority ${r.priority}, weight ${r.weight})`).join(', ')}`,
          );
        } catch (err) {
          if (isMissing(err)) {
            parts.push(`${question}: none`);
            continue;
          }
          this.steps.push(failed('srv', parts.join('; '), `the DNS lookup of ${question} failed: ${errorText(err)}`));
          return false;
        }
      }
    }
    this.steps.push(step('srv', parts.join('; ')));
    return true;
  }

  /** Where this server would connect, chosen as the federation client chooses, and its address. */
  private async resolutionStep(): Promise<Found | undefined> {
    const discovered = (r: ResolvedServer) => r.via === 'well-known' || r.via === 'srv';
    let naming = this.preferred;
    let target: ResolvedServer;
    try {
      target = await within(this.resolver.resolve(this.serverName, naming), this.timeoutMs, 'resolution');
      if (target.via === 'default-port') {
        const second = await within(this.resolver.resolve(this.serverName, other(naming)), this.timeoutMs, 'resolution').catch(() => undefined);
        if (second && discovered(second)) {
          naming = other(naming);
          target = second;
        }
      }
    } catch (err) {
      this.steps.push(failed('resolution', '', errorText(err)));
      return undefined;
    }
    const where = `${target.host}:${target.port}`;
    const detail = `via ${target.via} (${naming} naming): connect to ${where}, certificate name ${target.tlsServerName}, Host ${target.hostHeader}`;
    try {
      const addresses = await within(lookupAddresses(this.dns, target.host), this.timeoutMs, `address of ${target.host}`);
      const address = addresses[0]!.address;
      this.steps.push(step('resolution', `${detail}; ${target.host} is ${addresses.map((a) => a.address).join(', ')}`));
      return { naming, target, address };
    } catch (err) {
      const reason = isMissing(err) ? `${target.host} has no AAAA or A record` : `cannot look up ${target.host}: ${errorText(err)}`;
      this.steps.push(failed('resolution', detail, reason));
      return undefined;
    }
  }

  /** Connects itself to show the certificate; true when requests over TLS can go ahead. */
  private async tls({ target, address }: Found): Promise<boolean> {
    const sni = isIP(target.tlsServerName) === 0 ? target.tlsServerName : undefined;
    const where = `${address}:${target.port}`;
    let socket: ReturnType<typeof tlsConnect> | undefined;
    try {
      const connected = new Promise<ReturnType<typeof tlsConnect>>((resolve, reject) => {
        socket = tlsConnect({
          host: address,
          port: target.port,
          ...(sni !== undefined ? { servername: sni } : {}),
          ...(this.ca ? { ca: this.ca } : {}),
          // Checked below, so that the report can say what is wrong with the certificate.
          rejectUnauthorized: false,
          ALPNProtocols: ['http/1.1'],
        });
        socket.once('secureConnect', () => resolve(socket!));
        socket.once('error', reject);
      });
      const s = await within(connected, this.timeoutMs, `TLS with ${where}`);
      const cert = s.getPeerCertificate();
      const problems: string[] = [];
      // A name mismatch also shows here (as ERR_TLS_CERT_ALTNAME_INVALID); it is said below.
      const trustError = s.authorized ? undefined : String(s.authorizationError);
      if (trustError !== undefined && trustError !== 'ERR_TLS_CERT_ALTNAME_INVALID') {
        problems.push(`the certificate is not trusted: ${TRUST_ERRORS[trustError] ?? 'its chain does not verify'} (${trustError})`);
      }
      const identity = cert.subject === undefined ? new Error('no certificate') : checkServerIdentity(target.tlsServerName, cert);
      if (identity !== undefined) problems.push(`the certificate is not valid for ${target.tlsServerName}: ${identity.message}`);
      const detail = `${where}, SNI ${sni ?? '(none: IP address)'}, ${s.getProtocol() ?? 'TLS'}; ${describeCertificate(cert)}`;
      if (problems.length === 0) {
        this.steps.push(step('tls', `${detail}; valid for ${target.tlsServerName}`));
        return true;
      }
      if (this.deps.disableTlsValidation) {
        this.steps.push(step('tls', `${detail}; accepted only because TLS validation is disabled: ${problems.join('; ')}`));
        return true;
      }
      this.steps.push(failed('tls', detail, problems.join('; ')));
      return false;
    } catch (err) {
      this.steps.push(failed('tls', where, `cannot connect with TLS to ${where}: ${errorText(err)}`));
      return false;
    } finally {
      (socket as ReturnType<typeof tlsConnect> | undefined)?.destroy();
    }
  }

  private httpClient({ target, address }: Found): Client {
    const host = isIP(address) === 6 ? `[${address}]` : address;
    return new this.undici!.Client(`https://${host}:${target.port}`, {
      connect: {
        rejectUnauthorized: !this.deps.disableTlsValidation,
        ...(isIP(target.tlsServerName) === 0 ? { servername: target.tlsServerName } : {}),
        ...(this.ca ? { ca: this.ca } : {}),
      },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  /** GET `path` under the found naming's root, then the other's if the first is not known there. */
  private async get(client: Client, found: Found, path: string): Promise<{ uri: string; status: number; json: unknown }> {
    let first: { uri: string; status: number; json: unknown } | undefined;
    for (const naming of [found.naming, other(found.naming)]) {
      const uri = `${ROOT[naming]}${path}`;
      const res = await client.request({
        path: uri,
        method: 'GET',
        headers: { host: found.target.hostHeader, accept: 'application/json', 'user-agent': 'Hearth federation-check' },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await readLimited(res.body, MAX_BODY_BYTES);
      let json: unknown;
      try {
        json = text === undefined ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      const answer = { uri, status: res.statusCode, json };
      const unknownPath =
        (res.statusCode === 404 || res.statusCode === 405) && (json === undefined || (isJsonObject(json) && json.errcode === 'M_UNRECOGNIZED'));
      if (!unknownPath) return answer;
      first ??= answer;
    }
    return first!;
  }

  private async version(client: Client, found: Found): Promise<void> {
    try {
      const res = await this.get(client, found, '/federation/v1/version');
      const server = isJsonObject(res.json) ? res.json.server : undefined;
      if (res.status !== 200 || !isJsonObject(server)) {
        this.steps.push(failed('version', `GET ${res.uri}`, `answered ${res.status}${res.json === undefined ? ' with a body that is not JSON' : ' without a server object'}`));
        return;
      }
      const software = [server.name, server.version].filter((v) => typeof v === 'string').join(' ') || 'unnamed software';
      this.steps.push(step('version', `${software} (GET ${res.uri})`));
    } catch (err) {
      this.steps.push(failed('version', 'GET /federation/v1/version', errorText(err)));
    }
  }

  private async keys(client: Client, found: Found): Promise<void> {
    try {
      const res = await this.get(client, found, '/key/v2/server');
      const what = `GET ${res.uri}`;
      if (res.status !== 200 || res.json === undefined) {
        this.steps.push(failed('keys', what, `answered ${res.status}${res.json === undefined ? ' with a body that is not JSON' : ''}`));
        return;
      }
      const now = this.now();
      const check = verifyKeyResponse(res.json, this.serverName, now);
      if (!check.ok) {
        this.steps.push(failed('keys', what, `the key response does not verify: ${check.reason}`));
        return;
      }
      const listed = [...check.response.verifyKeys.keys()].join(', ');
      const until = (check.response.json.valid_until_ts as number);
      const detail = `${listed}, valid until ${new Date(until).toISOString()}, signed by ${this.serverName} (${what})`;
      // verifyKeyResponse caps the validity but accepts a past one: a stale answer is a fault here.
      if (until <= now) {
        this.steps.push(failed('keys', detail, `valid_until_ts is in the past: the server publishes keys nobody may use`));
        return;
      }
      this.steps.push(step('keys', detail));
    } catch (err) {
      this.steps.push(failed('keys', 'GET /key/v2/server', errorText(err)));
    }
  }

  /**
   * Whether the other server reaches this one: asked as a notary for this server's keys
   * (`GET /key/v2/query/{us}`), it answers with our current key only if it could fetch it from us
   * (now or earlier).
   */
  private async reachBack(client: Client, found: Found): Promise<void> {
    const self = this.deps.self;
    if (self === undefined) {
      this.steps.push(notNeeded('reach back', `not checked: this server's name is not known to the check`));
      return;
    }
    try {
      const res = await this.get(client, found, `/key/v2/query/${encodeURIComponent(self.serverName)}`);
      const what = `GET ${res.uri}`;
      const listed = isJsonObject(res.json) && Array.isArray(res.json.server_keys) ? res.json.server_keys : [];
      const ours = encodeBase64(self.publicKey);
      const holds = listed.some((k) => {
        if (!isJsonObject(k) || k.server_name !== self.serverName || !isJsonObject(k.verify_keys)) return false;
        const key = k.verify_keys[self.keyId];
        return isJsonObject(key) && key.key === ours;
      });
      if (res.status === 200 && holds) {
        this.steps.push(step('reach back', `${this.serverName} holds this server's key ${self.keyId} (${what})`));
        return;
      }
      const why =
        res.status === 200
          ? `${this.serverName} could not fetch this server's key ${self.keyId}: it cannot reach ${self.serverName}, or it does not answer key queries for other servers`
          : `${this.serverName} answered ${res.status}: it does not answer key queries for other servers, so whether it reaches this server is not known`;
      this.steps.push(failed('reach back', what, why));
    } catch (err) {
      this.steps.push(failed('reach back', `GET /key/v2/query/${self.serverName}`, errorText(err)));
    }
  }
}

// OpenSSL's verification codes, in plain words.
const TRUST_ERRORS: Record<string, string> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'it is issued by a CA that is not trusted, or the server does not send the intermediate certificates',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'it is issued by a CA that is not trusted, or the server does not send the intermediate certificates',
  UNABLE_TO_GET_ISSUER_CERT: 'its issuer is unknown',
  SELF_SIGNED_CERT_IN_CHAIN: 'its chain ends in a self-signed CA that is not trusted',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'it is self-signed',
  CERT_HAS_EXPIRED: 'it has expired',
  CERT_NOT_YET_VALID: 'it is not valid yet',
  CERT_REVOKED: 'it is revoked',
};

function describeCertificate(cert: PeerCertificate): string {
  if (cert.subject === undefined) return 'no certificate';
  const dn = (o: Record<string, unknown> | undefined) =>
    Object.entries(o ?? {})
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(', ');
  const expires = new Date(cert.valid_to);
  return [
    `subject ${dn(cert.subject as unknown as Record<string, unknown>) || '(empty)'}`,
    `names ${cert.subjectaltname ?? '(none)'}`,
    `issuer ${dn(cert.issuer as unknown as Record<string, unknown>) || '(empty)'}`,
    `valid until ${Number.isNaN(expires.getTime()) ? cert.valid_to : expires.toISOString()}`,
  ].join(', ');
}
