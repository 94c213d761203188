// Requests to application services, over undici's keep-alive pools, each within a time limit.

import { loadUndici } from '../federation/undici.js';
import type { ServiceHttp } from './service-api.js';

/** How long a service may take to answer a request. */
const TIMEOUT_MS = 30_000;

export function serviceHttp(options: { readonly disableTlsValidation: boolean; readonly timeoutMs?: number }): ServiceHttp & { close(): Promise<void> } {
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  let agent: Promise<import('undici').Agent> | undefined;
  const pool = () =>
    (agent ??= loadUndici().then(
      (undici) => new undici.Agent({ connect: { rejectUnauthorized: !options.disableTlsValidation, timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }),
    ));
  const http = async (req: Parameters<ServiceHttp>[0]) => {
    const undici = await loadUndici();
    const res = await undici.request(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      dispatcher: await pool(),
      signal: AbortSignal.timeout(req.timeoutMs ?? timeoutMs),
    });
    return { status: res.statusCode, body: await res.body.text() };
  };
  return Object.assign(http, { close: async () => (agent === undefined ? undefined : (await agent).close()) });
}
