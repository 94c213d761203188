// Requests to one application service's API (`/app/v1/...` under its url), shared by
// transactions and queries. Paths: `_chat` or `_matrix` as `global.protocol_name` says; a service
// that answers 404 or 405 to one naming is tried with the other, and the naming that worked is
// kept for it. The hs_token goes as a bearer token (and, for services older than spec 1.4, as
// `access_token` too), only ever to the service's own url.

import type { AppServiceRegistration } from './registration.js';

/**
 * One HTTP request to a service; resolves with its status, rejects when it could not be made or
 * took longer than `timeoutMs` (default: the transport's own limit).
 */
export type ServiceHttp = (req: {
  readonly method: 'PUT' | 'GET' | 'POST';
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly timeoutMs?: number;
}) => Promise<{ readonly status: number; readonly body: string }>;

export interface ServiceApiOptions {
  readonly http: ServiceHttp;
  /** `global.protocol_name`: the naming tried first. */
  readonly protocolName: 'chat' | 'matrix';
  /** Also send the hs_token as the `access_token` query parameter (services older than spec 1.4). */
  readonly legacyAuthorization: boolean;
}

export interface ServiceAnswer {
  readonly status: number;
  readonly body: string;
  /** Neither naming has the endpoint: both answered 404 or 405 (this is the last of them). */
  readonly unrouted: boolean;
}

type Naming = 'chat' | 'matrix';

export class ServiceApi {
  private naming: Naming;

  constructor(
    readonly service: AppServiceRegistration & { readonly url: string },
    private readonly options: ServiceApiOptions,
  ) {
    this.naming = options.protocolName;
  }

  /**
   * `/app/v1/{path}` (`path` encoded already): the first answer other than 404 or 405, else the
   * last of those. Rejects when a request could not be made.
   */
  async request(method: 'PUT' | 'GET' | 'POST', path: string, options: { readonly body?: string; readonly timeoutMs?: number } = {}): Promise<ServiceAnswer> {
    const { body, timeoutMs } = options;
    const first = this.naming;
    let last: { status: number; body: string } | undefined;
    for (const naming of [first, first === 'chat' ? 'matrix' : 'chat'] as const) {
      // Under the url's own path, when it has one.
      const url = new URL(`${this.service.url.replace(/\/+$/, '')}/_${naming}/app/v1/${path}`);
      if (this.options.legacyAuthorization) url.searchParams.set('access_token', this.service.hs_token);
      const res = await this.options.http({
        method,
        url: url.toString(),
        headers: { authorization: `Bearer ${this.service.hs_token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      });
      if (res.status >= 200 && res.status < 300) this.naming = naming;
      if (res.status !== 404 && res.status !== 405) return { status: res.status, body: res.body, unrouted: false };
      last = res;
    }
    return { status: last!.status, body: last!.body, unrouted: true };
  }
}
