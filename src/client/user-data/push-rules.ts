// Push rules: GET /pushrules/ and /pushrules/{scope}/, and per rule
// /pushrules/{scope}/{kind}/{ruleId} (GET, PUT with ?before= / ?after=, DELETE) with its
// /enabled and /actions (GET, PUT). Clients (matrix-js-sdk among them) read the rules before
// their first sync and do not start without them.
//
// Every other path under /pushrules/ (a segment missing or too many, an empty rule id, an unknown
// attribute) is answered here too, as Synapse answers it: 400 M_UNRECOGNIZED after the scope
// (400 M_UNRECOGNIZED) and kind (400 M_INVALID_PARAM) checks, never the router's bare 404 / 405.
// Unlike Synapse, a trailing slash after a rule id is no alias of the rule, and DELETE of
// .../enabled or .../actions deletes nothing.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { checkRuleIdGiven, checkScope, parseKind, unrecognizedPath, type PushRuleService } from '../../users/push-rules.js';
import { body, param, requesterOf, VERSIONS } from './fields.js';

const RULE = '/pushrules/:scope/:kind/:ruleId';
const TRAILING_SLASH = 'Unrecognized push rule path: you probably wanted a trailing slash';

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
  /** Refuses a write to a path that names no rule: the scope and kind are checked first. */
  const refuse = (message?: string) => async (req: HttpRequest) => {
    if (req.params['scope'] !== undefined) checkScope(req.params['scope']);
    if (req.params['kind'] !== undefined) parseKind(req.params['kind']);
    if (req.params['ruleId'] !== undefined) checkRuleIdGiven(req.params['ruleId']);
    throw unrecognizedPath(message);
  };
  return [
    ...['/pushrules/', '/pushrules'].map((path) => route('GET', path, async (req) => ({ body: await pushRules.all(me(req)) }))),
    route('GET', '/pushrules/:scope/', async (req) => ({ body: await pushRules.ruleset(me(req), param(req, 'scope')) })),
    ...(['PUT', 'DELETE'] as const).flatMap((method) => [
      route(method, '/pushrules/', refuse('A push rule path needs a scope, a kind and a rule id'), { body: 'none' }),
      route(method, '/pushrules/:scope/', refuse('A push rule path needs a kind and a rule id'), { body: 'none' }),
    ]),
    // An empty rule id: GET lists the kind's rules (as Synapse does); writes are refused.
    route('GET', RULE, async (req) => {
      const ruleId = param(req, 'ruleId');
      if (ruleId === '') return { body: await pushRules.kindRules(me(req), param(req, 'scope'), param(req, 'kind')) };
      return { body: await pushRules.rule(...rule(req)) };
    }),
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
    // The spec's body is `{"enabled": <boolean>}`; a bare `true` is not a JSON object (M_BAD_JSON).
    route('PUT', `${RULE}/enabled`, async (req) => {
      await pushRules.setEnabled(...rule(req), body(req));
      return { body: {} };
    }),
    route('GET', `${RULE}/actions`, async (req) => ({ body: await pushRules.actions(...rule(req)) })),
    route('PUT', `${RULE}/actions`, async (req) => {
      await pushRules.setActions(...rule(req), body(req));
      return { body: {} };
    }),
    // Attributes are not deleted, the rule is (Synapse would delete the whole rule here).
    ...['enabled', 'actions'].map((attribute) =>
      route('DELETE', `${RULE}/${attribute}`, refuse(`A push rule's ${attribute} cannot be deleted; DELETE the rule itself`), { body: 'none' }),
    ),
    ...(['GET', 'PUT', 'DELETE'] as const).map((method) =>
      route(method, '/pushrules/*', async (req) => ({ body: await malformedPath(pushRules, me(req), method, param(req, '*')) }), { body: 'none' }),
    ),
  ];
}

/**
 * A path under /pushrules/ that none of the API's shapes matched, its segments percent-decoded.
 * The one success: GET of another attribute of a rule (`.../{ruleId}/conditions`), as Synapse serves.
 */
async function malformedPath(pushRules: PushRuleService, userId: string, method: string, rest: string): Promise<unknown> {
  const segments = rest.split('/');
  checkScope(segments[0]!);
  if (segments.length > 1 && segments[1] !== '') parseKind(segments[1]!);
  if (method === 'GET' && segments.length === 4 && segments.every((s) => s !== '')) {
    return pushRules.ruleAttribute(userId, segments[0]!, segments[1]!, segments[2]!, segments[3]!);
  }
  if (method === 'GET' && segments.length <= 2 && segments.at(-1) !== '') throw unrecognizedPath(TRAILING_SLASH);
  if (segments.length === 4 && segments[2] !== '' && segments[3] !== '') {
    throw unrecognizedPath(`Push rules have no attribute ${segments[3]!.slice(0, 80)} to ${method === 'PUT' ? 'set' : 'delete'}`);
  }
  throw unrecognizedPath();
}
