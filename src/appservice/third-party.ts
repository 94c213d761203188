// Third-party lookups (client API `/thirdparty/*`), answered by the application services that
// bridge each protocol (their registration's `protocols`), as Synapse answers them:
// - a protocol's metadata is the first answer of its services, with the `instances` of all of
//   them, each instance given `instance_id` "{service id}|{network_id}" (what `/publicRooms`
//   takes as `third_party_instance_id`); kept for a few minutes;
// - users and locations are asked of every service of the protocol (or every service, for the
//   reverse lookups by Matrix id and alias) at once, and their answers concatenated; entries
//   without the required string fields are dropped;
// - a service that fails or does not answer in time is left out (and logged), never the caller's error.

import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';
import { ServiceApi, type ServiceApiOptions } from './service-api.js';

/** A client waits on the lookup. */
const LOOKUP_TIMEOUT_MS = 5000;
/** How long a service's protocol metadata is kept. */
const PROTOCOL_TTL_MS = 5 * 60_000;

export type ThirdPartyKind = 'user' | 'location';

export interface ThirdPartyOptions extends ServiceApiOptions {
  readonly services: AppServices;
  readonly log: { warn(message: string, details?: object): void };
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

export class ThirdPartyLookups {
  private readonly apis = new Map<string, ServiceApi>();
  private readonly protocolCache = new Map<string, { readonly info: JsonObject; readonly at: number }>();
  private readonly now: () => number;

  constructor(private readonly options: ThirdPartyOptions) {
    this.now = options.now ?? Date.now;
    for (const service of options.services.all) {
      if (service.url !== null) this.apis.set(service.id, new ServiceApi({ ...service, url: service.url }, options));
    }
  }

  /** GET /thirdparty/protocols: every protocol a service declares and answers for. */
  async protocols(): Promise<Record<string, JsonObject>> {
    const names = [...new Set(this.options.services.all.flatMap((s) => s.protocols))];
    const infos = await Promise.all(names.map((p) => this.protocolInfo(p)));
    const out: Record<string, JsonObject> = {};
    names.forEach((p, i) => {
      if (infos[i] !== undefined) out[p] = infos[i]!;
    });
    return out;
  }

  /** GET /thirdparty/protocol/{protocol}: 404 M_NOT_FOUND when no service answers for it. */
  async protocol(protocol: string): Promise<JsonObject> {
    const info = await this.protocolInfo(protocol);
    if (info === undefined) throw HearthError.notFound(`Unknown protocol ${protocol}`);
    return info;
  }

  /** GET /thirdparty/{user|location}/{protocol} with the protocol's fields. */
  query(kind: ThirdPartyKind, protocol: string, fields: Readonly<Record<string, string>>): Promise<JsonObject[]> {
    const path = `thirdparty/${kind}/${encodeURIComponent(protocol)}${queryString(fields)}`;
    return this.gather(this.servicesOf(protocol), path, kind === 'user' ? 'userid' : 'alias');
  }

  /** GET /thirdparty/user?userid= and /thirdparty/location?alias=: asked of every service. */
  reverse(kind: ThirdPartyKind, fields: Readonly<Record<string, string>>): Promise<JsonObject[]> {
    const field = kind === 'user' ? 'userid' : 'alias';
    if (fields[field] === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing ${field} parameter`);
    return this.gather(this.options.services.all, `thirdparty/${kind}${queryString(fields)}`, field);
  }

  private servicesOf(protocol: string): AppServiceRegistration[] {
    return this.options.services.all.filter((s) => s.protocols.includes(protocol));
  }

  private async protocolInfo(protocol: string): Promise<JsonObject | undefined> {
    const infos = await Promise.all(this.servicesOf(protocol).map((s) => this.serviceProtocol(s, protocol)));
    let merged: JsonObject | undefined;
    for (const info of infos) {
      if (info === undefined) continue;
      if (merged === undefined) merged = { ...info, instances: [...(info['instances'] as JsonObject[])] };
      else (merged['instances'] as JsonObject[]).push(...(info['instances'] as JsonObject[]));
    }
    return merged;
  }

  /** One service's metadata of the protocol, its instances named; undefined when it has none to give. */
  private async serviceProtocol(service: AppServiceRegistration, protocol: string): Promise<JsonObject | undefined> {
    const key = `${service.id}\n${protocol}`;
    const kept = this.protocolCache.get(key);
    if (kept !== undefined && this.now() - kept.at < PROTOCOL_TTL_MS) return kept.info;
    const answer = await this.ask(service, `thirdparty/protocol/${encodeURIComponent(protocol)}`);
    if (!isJsonObject(answer) || !Array.isArray(answer['instances'])) return undefined;
    const instances = answer['instances'].filter(isJsonObject).map((instance) => {
      const networkId = instance['network_id'];
      return typeof networkId === 'string' ? { ...instance, instance_id: `${service.id}|${networkId}` } : instance;
    });
    const info = { ...answer, instances };
    this.protocolCache.set(key, { info, at: this.now() });
    return info;
  }

  private async gather(services: readonly AppServiceRegistration[], path: string, required: 'userid' | 'alias'): Promise<JsonObject[]> {
    const answers = await Promise.all(services.map((s) => this.ask(s, path)));
    return answers.flatMap((a) => (Array.isArray(a) ? a.filter((r): r is JsonObject => isValidResult(r, required)) : []));
  }

  /** The service's JSON answer to a GET, or undefined (failures are logged). */
  private async ask(service: AppServiceRegistration, path: string): Promise<unknown> {
    const api = this.apis.get(service.id);
    if (api === undefined) return undefined;
    try {
      const res = await api.request('GET', path, { timeoutMs: this.options.timeoutMs ?? LOOKUP_TIMEOUT_MS });
      if (res.status < 200 || res.status >= 300) {
        if (res.status !== 404) this.options.log.warn('application service third-party lookup failed', { service: service.id, path: path.split('?')[0], status: res.status });
        return undefined;
      }
      return JSON.parse(res.body) as unknown;
    } catch (err) {
      this.options.log.warn('application service third-party lookup failed', { service: service.id, path: path.split('?')[0], err: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
  }
}

function queryString(fields: Readonly<Record<string, string>>): string {
  const q = new URLSearchParams(fields).toString();
  return q === '' ? '' : `?${q}`;
}

/** A user or location as the spec describes it: `protocol`, the required id as strings, and `fields`. */
function isValidResult(r: unknown, required: 'userid' | 'alias'): boolean {
  return isJsonObject(r) && typeof r[required] === 'string' && typeof r['protocol'] === 'string' && isJsonObject(r['fields']);
}
