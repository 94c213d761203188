// User and alias queries (application service API, "Querying"): a local user unknown here in a
// service's exclusive user namespace is asked of that service (`GET /users/{userId}`), and a
// local alias unknown here of every service whose alias namespaces hold it (`GET /rooms/{alias}`),
// as Synapse asks. A service answering 2xx has created the user (or the room and alias) through
// the client API first; anything else, or no answer within a few seconds, leaves it unknown.
// Also the ping a service asks for (`POST /ping`, client API `/appservice/{id}/ping`).

import { HearthError } from '../protocol/errors.js';
import { isRoomAlias, serverNameOf, tryParseUserId } from '../protocol/ids.js';
import type { AppServiceQueries } from '../rooms/service.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';
import { ServiceApi, type ServiceApiOptions } from './service-api.js';

/** A client waits on the query: not for as long as a transaction may take. */
const QUERY_TIMEOUT_MS = 5000;
/** A ping is a check of the connection: as long as a query may take, no longer. */
const PING_TIMEOUT_MS = 10_000;

export interface AppServiceQueryOptions extends ServiceApiOptions {
  readonly services: AppServices;
  readonly log: { warn(message: string, details?: object): void };
  readonly timeoutMs?: number;
}

export class AppServiceQueryClient implements AppServiceQueries {
  private readonly apis = new Map<string, ServiceApi>();
  /** Queries in flight, by path: lookups of the same unknown id at once share one. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(private readonly options: AppServiceQueryOptions) {
    for (const service of options.services.all) {
      if (service.url !== null) this.apis.set(service.id, new ServiceApi({ ...service, url: service.url }, options));
    }
  }

  async queryUser(userId: string): Promise<boolean> {
    const { services } = this.options;
    const user = tryParseUserId(userId, { allowNonCompliant: true });
    if (user === undefined || serverNameOf(user) !== services.serverName) return false;
    const owners = services.all.filter((s) => s.namespaces.users.some((ns) => ns.exclusive && ns.pattern.test(user)));
    return this.askEach(owners, `users/${encodeURIComponent(user)}`);
  }

  async queryAlias(alias: string): Promise<boolean> {
    const { services } = this.options;
    if (!isRoomAlias(alias) || serverNameOf(alias) !== services.serverName) return false;
    const interested = services.all.filter((s) => services.isInterestedInAlias(s, alias));
    return this.askEach(interested, `rooms/${encodeURIComponent(alias)}`);
  }

  /**
   * Pings the service (its `POST /ping`, with the client's transaction id) and answers how long it
   * took: 400 M_URL_NOT_SET without a url, 502 M_BAD_STATUS (with the service's status and body)
   * when it does not answer 2xx, 502 M_CONNECTION_FAILED or 504 M_CONNECTION_TIMEOUT when it
   * cannot be reached.
   */
  async ping(serviceId: string, transactionId: string | undefined): Promise<{ duration_ms: number }> {
    const api = this.apis.get(serviceId);
    if (api === undefined) throw new HearthError(400, 'M_URL_NOT_SET', 'The application service has no url');
    const started = performance.now();
    let res;
    try {
      res = await api.request('POST', 'ping', { body: JSON.stringify(transactionId !== undefined ? { transaction_id: transactionId } : {}), timeoutMs: PING_TIMEOUT_MS });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || /timeout/i.test(String((err as { code?: unknown }).code ?? '')));
      if (timedOut) throw new HearthError(504, 'M_CONNECTION_TIMEOUT', 'The application service did not answer in time');
      throw new HearthError(502, 'M_CONNECTION_FAILED', 'The application service could not be reached');
    }
    if (res.status < 200 || res.status >= 300) {
      throw new HearthError(502, 'M_BAD_STATUS', `The application service answered ${res.status}`, { status: res.status, body: res.body.slice(0, 1000) });
    }
    return { duration_ms: Math.round(performance.now() - started) };
  }

  /** Asks the services in turn until one says it knows the id. */
  private async askEach(services: readonly AppServiceRegistration[], path: string): Promise<boolean> {
    for (const service of services) {
      const api = this.apis.get(service.id);
      if (api !== undefined && (await this.ask(api, path))) return true;
    }
    return false;
  }

  private ask(api: ServiceApi, path: string): Promise<boolean> {
    const key = `${api.service.id} ${path}`;
    let pending = this.asking.get(key);
    if (pending === undefined) {
      pending = this.request(api, path).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    return pending;
  }

  private async request(api: ServiceApi, path: string): Promise<boolean> {
    const service = api.service.id;
    try {
      const res = await api.request('GET', path, { timeoutMs: this.options.timeoutMs ?? QUERY_TIMEOUT_MS });
      if (res.status >= 200 && res.status < 300) return true;
      // 404 is the usual "no such user or room"; anything else is the service's problem to see.
      if (res.status !== 404) this.options.log.warn('application service query failed', { service, path, status: res.status });
      return false;
    } catch (err) {
      this.options.log.warn('application service query failed', { service, path, err: err instanceof Error ? err.message : String(err) });
      return false;
    }
  }
}
