// Push rules: GET /pushrules/ and /pushrules/{scope}/, and per rule
// /pushrules/{scope}/{kind}/{ruleId} (GET, PUT with ?before= / ?after=, DELETE) with its
// /enabled and /actions (GET, PUT). Clients (matrix-js-sdk among them) read the rules before
// their first sync and do not start without them.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { parseJsonObjectBody } from '../../http/body.js';
import { HearthError } from '../../protocol/errors.js';
import type { PushRuleService } from '../../users/push-rules.js';
import { body, param, requesterOf, VERSIONS } from './fields.js';

const RULE = '/pushrules/:scope/:kind/:ruleId';

/** A single-valued query parameter; absent or empty is undefined. */
function queryParam(req: HttpRequest, key: string): string | undefined {
  const v = req.query[key];
  if (Array.isArray(v)) throw HearthError.invalidParam(`'${key}' may be given once`);
  return v === undefined || v === '' ? undefined : v;
}

export function pushRuleRoutes(deps: { pushRules: PushRuleService }): RouteDef[] {
  const { pushRules } = deps;
  const me = (req: HttpRequest) => requesterOf(req).userId;
  const rule = (req: HttpRequest) => [me(req), param(req, 'scope'), param(req, 'kind'), param(req, 'ruleId')] as const;
  const route = (method: RouteDef['method'], path: string, handler: RouteDef['handler'], extra: Partial<RouteDef> = {}): RouteDef => ({
    method,
    api: 'client',
    versions: VERSIONS,
    path,
    handler,
    ...extra,
  });
  return [
    ...['/pushrules/', '/pushrules'].map((path) => route('GET', path, async (req) => ({ body: await pushRules.all(me(req)) }))),
    route('GET', '/pushrules/:scope/', async (req) => ({ body: await pushRules.ruleset(me(req), param(req, 'scope')) })),
    route('GET', RULE, async (req) => ({ body: await pushRules.rule(...rule(req)) })),
    route('PUT', RULE, async (req) => {
      const placement = { before: queryParam(req, 'before'), after: queryParam(req, 'after') };
      await pushRules.putRule(...rule(req), body(req), {
        ...(placement.before !== undefined ? { before: placement.before } : {}),
        ...(placement.after !== undefined ? { after: placement.after } : {}),
      });
      return { body: {} };
    }),
    route('DELETE', RULE, async (req) => {
      await pushRules.deleteRule(...rule(req));
      return { body: {} };
    }),
    route('GET', `${RULE}/enabled`, async (req) => ({ body: await pushRules.enabled(...rule(req)) })),
    // Read raw: some clients send a bare `true` / `false` instead of `{"enabled": ...}`.
    route(
      'PUT',
      `${RULE}/enabled`,
      async (req) => {
        await pushRules.setEnabled(...rule(req), enabledBody(req.body));
        return { body: {} };
      },
      { body: 'raw' },
    ),
    route('GET', `${RULE}/actions`, async (req) => ({ body: await pushRules.actions(...rule(req)) })),
    route('PUT', `${RULE}/actions`, async (req) => {
      await pushRules.setActions(...rule(req), body(req));
      return { body: {} };
    }),
  ];
}

/** A bare `true` / `false`, or else the body read as a JSON object. */
function enabledBody(raw: unknown): unknown {
  const text = Buffer.isBuffer(raw) ? raw.toString('latin1').trim() : undefined;
  if (text === 'true' || text === 'false') return text === 'true';
  return parseJsonObjectBody(raw);
}
