// `hearth federation-check SERVER_NAME`: runs the federation check (federation/check.ts) from the
// command line, with the naming, TLS setting, server name and signing key of the configuration
// when there is one, and prints
// the report as lines or JSON. Exit status 0 when federation would work, 1 otherwise.

import { promises as dnsPromises } from 'node:dns';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.js';
import { type CheckStep, type FederationCheckDeps, type FederationReport, federationCheck } from '../federation/check.js';
import { parseSigningKeyFile } from '../protocol/signing.js';
import { UsageError } from './errors.js';
import { DEFAULT_CONFIG_FILE } from './first-run.js';
import { FEDERATION_CHECK } from './usage.js';

export interface FederationCheckIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: NodeJS.ProcessEnv;
}

const processIo: FederationCheckIo = { stdout: process.stdout, stderr: process.stderr, env: process.env };

export async function federationCheckCommand(argv: string[], io: FederationCheckIo = processIo): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: FEDERATION_CHECK.options, allowPositionals: true, strict: true });
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'missing SERVER_NAME' : 'give one SERVER_NAME');
  const serverName = positionals[0]!;
  const deps: FederationCheckDeps = { ...settingsFromConfig(values['config'], io), ...reachFromEnv(io.env) };
  const report = await federationCheck(serverName, deps);
  io.stdout.write(values['json'] === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}

/** The configuration's naming and TLS setting; the defaults when no file is given and none is here. */
function settingsFromConfig(given: unknown, io: FederationCheckIo): FederationCheckDeps {
  const path = resolve(typeof given === 'string' ? given : DEFAULT_CONFIG_FILE);
  if (typeof given !== 'string' && !existsSync(path)) return {};
  const { config, warnings } = loadConfig(path, io.env);
  for (const w of warnings) io.stderr.write(`warning: ${path}: ${w.path}: ${w.message}\n`);
  return {
    protocolName: config.global.protocol_name,
    disableTlsValidation: config.federation_api.disable_tls_validation,
    ...selfOf(config.global.server_name, config.global.private_key),
  };
}

/** This server's name and key, for the reach-back step, when its key file exists (never made here). */
function selfOf(serverName: string, keyPath: string): Pick<FederationCheckDeps, 'self'> {
  if (!existsSync(keyPath)) return {};
  try {
    const [key] = parseSigningKeyFile(readFileSync(keyPath, 'utf8'));
    return key === undefined ? {} : { self: { serverName, keyId: key.keyId, publicKey: key.publicKey } };
  } catch {
    return {};
  }
}

/** HEARTH_DNS_SERVERS and HEARTH_EXTRA_CA: another DNS server and CA, for tests and diagnosis. */
function reachFromEnv(env: NodeJS.ProcessEnv): Pick<FederationCheckDeps, 'dns' | 'ca'> {
  const out: { dns?: dnsPromises.Resolver; ca?: string } = {};
  const servers = env['HEARTH_DNS_SERVERS']?.trim();
  if (servers) {
    const resolver = new dnsPromises.Resolver({ timeout: 3000, tries: 2 });
    try {
      resolver.setServers(servers.split(',').map((s) => s.trim()));
    } catch (err) {
      throw new UsageError(`HEARTH_DNS_SERVERS: ${(err as Error).message}`);
    }
    out.dns = resolver;
  }
  const caFile = env['HEARTH_EXTRA_CA']?.trim();
  if (caFile) {
    try {
      out.ca = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new UsageError(`HEARTH_EXTRA_CA: cannot read ${caFile}: ${(err as Error).message}`);
    }
    if (!out.ca.includes('-----BEGIN CERTIFICATE-----')) throw new UsageError(`HEARTH_EXTRA_CA: ${caFile} holds no PEM certificate`);
  }
  return out;
}

const WIDTH = 12;

function mark(s: CheckStep): string {
  if (s.skipped) return s.ok ? '-' : '✗';
  return s.ok ? '✓' : '✗';
}

/** One line per step (and its reason when it failed), then the verdict. */
export function formatReport(report: FederationReport): string {
  const lines = [`Federation check of ${report.server_name}${report.naming ? ` (${report.naming} naming)` : ''}`];
  for (const s of report.steps) {
    const text = [s.detail, s.error].filter((t) => t !== undefined && t !== '').join(' — ');
    lines.push(`${mark(s)} ${s.name.padEnd(WIDTH)}${text}`);
  }
  const failure = report.steps.find((s) => !s.ok && !s.skipped);
  lines.push(
    report.ok
      ? `OK: federation with ${report.server_name} would work.`
      : `FAILED: federation with ${report.server_name} would not work${failure ? `: ${failure.name}: ${failure.error ?? 'failed'}` : ''}.`,
  );
  return `${lines.join('\n')}\n`;
}
