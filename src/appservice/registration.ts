// One application service's registration file (application service API, "Registration"): YAML
// naming the service, its tokens, where it listens and the users, aliases and rooms it claims.
// Read as Synapse and Dendrite read it, so a bridge's generated file carries over unchanged.

import { parseDocument } from 'yaml';
import { type ConfigIssue, ConfigError } from '../config/index.js';
import { HearthError } from '../protocol/errors.js';
import { parseUserId } from '../protocol/ids.js';

export type NamespaceKind = 'users' | 'aliases' | 'rooms';

export const NAMESPACE_KINDS: readonly NamespaceKind[] = ['users', 'aliases', 'rooms'];

export interface Namespace {
  readonly exclusive: boolean;
  /** As written in the file. */
  readonly regex: string;
  /** The regex anchored at both ends: an ID belongs to the namespace only when it matches whole. */
  readonly pattern: RegExp;
}

export interface AppServiceRegistration {
  readonly id: string;
  /** Where transactions go; null for a service that only acts and receives nothing. */
  readonly url: string | null;
  /** What the service sends to act. */
  readonly as_token: string;
  /** What the server sends to the service. */
  readonly hs_token: string;
  /** The localpart of the service's own user on this server. */
  readonly sender_localpart: string;
  readonly namespaces: Readonly<Record<NamespaceKind, readonly Namespace[]>>;
  readonly rate_limited: boolean;
  /** Third-party protocols the service bridges. */
  readonly protocols: readonly string[];
  /** Whether typing, receipts and presence are pushed too (MSC2409, under any of its names). */
  readonly receive_ephemeral: boolean;
  /** `org.matrix.msc3202`: read and kept; device lists and one-time key counts are not pushed. */
  readonly msc3202: boolean;
}

/** The names one flag has had in bridges' files; any of them true turns it on. */
const EPHEMERAL_KEYS = ['receive_ephemeral', 'de.sorunome.msc2409.push_ephemeral', 'push_ephemeral'] as const;

/** A registration, or (without it) why the text is not one. */
export interface ReadRegistration {
  readonly registration?: AppServiceRegistration;
  /** Each at its field (`namespaces.users[0].regex`); empty when the registration is there. */
  readonly issues: readonly ConfigIssue[];
}

/**
 * Reads one registration file's text, collecting every problem. With `serverName`, the sender must
 * also make a valid user ID there.
 */
export function readRegistration(yamlText: string, serverName?: string): ReadRegistration {
  const issues: ConfigIssue[] = [];
  const fail = (path: string, message: string): undefined => void issues.push({ path, message });
  const doc = parseDocument(yamlText, { uniqueKeys: true, prettyErrors: true });
  for (const e of doc.errors) {
    fail(yamlPlace(e.linePos?.[0]), e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, ''));
  }
  if (issues.length > 0) return { issues };
  let root: unknown;
  try {
    root = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    // Unresolved aliases and alias bombs surface only here.
    return { issues: [{ path: '(yaml)', message: (err as Error).message }] };
  }
  if (!isMapping(root)) {
    return { issues: [{ path: '(top level)', message: `must be a mapping, got ${describe(root)}` }] };
  }

  const id = requiredString(root, 'id', fail);
  const url = serviceUrl(root['url'], fail);
  const asToken = requiredString(root, 'as_token', fail);
  const hsToken = requiredString(root, 'hs_token', fail);
  const senderLocalpart = requiredString(root, 'sender_localpart', fail);
  if (senderLocalpart !== undefined) senderProblem(senderLocalpart, serverName, fail);
  const namespaces = readNamespaces(root['namespaces'], fail);
  const rateLimited = optionalBoolean(root, 'rate_limited', true, fail);
  const protocols = readProtocols(root['protocols'], fail);
  const ephemeral = EPHEMERAL_KEYS.map((key) => optionalBoolean(root, key, false, fail));
  const msc3202 = optionalBoolean(root, 'org.matrix.msc3202', false, fail);
  if (issues.length > 0) return { issues };

  const registration: AppServiceRegistration = {
    id: id!,
    url: url ?? null,
    as_token: asToken!,
    hs_token: hsToken!,
    sender_localpart: senderLocalpart!,
    namespaces: Object.freeze(namespaces!),
    rate_limited: rateLimited!,
    protocols: protocols!,
    receive_ephemeral: ephemeral.includes(true),
    msc3202: msc3202!,
  };
  return { registration: Object.freeze(registration), issues: [] };
}

/**
 * One registration file's text as a frozen registration. Throws ConfigError listing every problem,
 * each as `<source>: <field>`.
 */
export function parseRegistration(
  yamlText: string,
  options: { readonly source?: string; readonly serverName?: string } = {},
): AppServiceRegistration {
  const { registration, issues } = readRegistration(yamlText, options.serverName);
  if (registration !== undefined) return registration;
  const prefix = options.source === undefined ? '' : `${options.source}: `;
  throw new ConfigError(issues.map((i) => ({ path: prefix + i.path, message: i.message })));
}

/** `^(?:regex)$`, compiled as JavaScript; throws a SyntaxError for an invalid regex. */
function compileNamespaceRegex(regex: string): RegExp {
  // Compiled alone first: wrapped, a fragment such as `a)|(b` would compile and mean something else.
  new RegExp(regex);
  return new RegExp(`^(?:${regex})$`);
}

type Fail = (path: string, message: string) => undefined;

function yamlPlace(at: { line: number; col: number } | undefined): string {
  return at === undefined ? '(yaml)' : `(yaml, line ${at.line} column ${at.col})`;
}

function requiredString(root: Record<string, unknown>, key: string, fail: Fail): string | undefined {
  const value = root[key];
  if (value === undefined || value === null) return fail(key, 'is required');
  if (typeof value !== 'string' || value === '') return fail(key, `must be a non-empty string, got ${describe(value)}`);
  return value;
}

function serviceUrl(value: unknown, fail: Fail): string | null | undefined {
  if (value === undefined || value === null) return null;
  const protocol = typeof value === 'string' && URL.canParse(value) ? new URL(value).protocol : undefined;
  if (protocol === 'http:' || protocol === 'https:') return value as string;
  return fail('url', `must be an http or https URL, or null, got ${describe(value)}`);
}

function senderProblem(localpart: string, serverName: string | undefined, fail: Fail): void {
  // The historical grammar, as for any existing account. Without a server name (a file checked
  // before it is installed) only the localpart's grammar counts, not the ID's length there.
  if (localpart.includes(':')) {
    fail('sender_localpart', `must not contain ":", got ${describe(localpart)}`);
    return;
  }
  try {
    parseUserId(`@${localpart}:${serverName ?? 'localhost'}`);
  } catch (err) {
    if (!(err instanceof HearthError)) throw err;
    const problem = err.message.replace(/^Invalid user ID "[^]*?": /, '');
    const where = serverName === undefined ? '' : ` on ${serverName}`;
    fail('sender_localpart', `does not make a valid user ID${where}: ${problem}`);
  }
}

function optionalBoolean(
  root: Record<string, unknown>,
  key: string,
  fallback: boolean,
  fail: Fail,
): boolean | undefined {
  const value = root[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') return fail(key, `must be true or false, got ${describe(value)}`);
  return value;
}

function readProtocols(value: unknown, fail: Fail): readonly string[] | undefined {
  if (value === undefined || value === null) return Object.freeze([]);
  if (!Array.isArray(value)) return fail('protocols', `must be a list of strings, got ${describe(value)}`);
  const bad = value.filter((p: unknown, i) => {
    if (typeof p === 'string' && p !== '') return false;
    fail(`protocols[${i}]`, `must be a non-empty string, got ${describe(p)}`);
    return true;
  });
  return bad.length === 0 ? Object.freeze([...(value as string[])]) : undefined;
}

function readNamespaces(value: unknown, fail: Fail): Record<NamespaceKind, readonly Namespace[]> | undefined {
  const out: Record<NamespaceKind, readonly Namespace[]> = { users: [], aliases: [], rooms: [] };
  if (value === undefined || value === null) return out;
  if (!isMapping(value)) {
    return fail('namespaces', `must be a mapping of users, aliases and rooms, got ${describe(value)}`);
  }
  let ok = true;
  for (const kind of NAMESPACE_KINDS) {
    const list = value[kind];
    const at = `namespaces.${kind}`;
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      fail(at, `must be a list of {exclusive, regex}, got ${describe(list)}`);
      ok = false;
      continue;
    }
    const entries: Namespace[] = [];
    list.forEach((entry: unknown, i) => {
      const namespace = readNamespace(entry, `${at}[${i}]`, fail);
      if (namespace === undefined) ok = false;
      else entries.push(namespace);
    });
    out[kind] = Object.freeze(entries);
  }
  return ok ? out : undefined;
}

function readNamespace(entry: unknown, at: string, fail: Fail): Namespace | undefined {
  if (!isMapping(entry)) return fail(at, `must be a mapping with exclusive and regex, got ${describe(entry)}`);
  const { exclusive, regex } = entry;
  if (typeof exclusive !== 'boolean') fail(`${at}.exclusive`, `must be true or false, got ${describe(exclusive)}`);
  if (typeof regex !== 'string') return fail(`${at}.regex`, `must be a string, got ${describe(regex)}`);
  let pattern: RegExp;
  try {
    pattern = compileNamespaceRegex(regex);
  } catch (err) {
    const reason = (err as Error).message.replace(/^Invalid regular expression: \/[^]*\/[a-z]*: /, '');
    return fail(`${at}.regex`, `invalid regular expression ${describe(regex)}: ${reason}`);
  }
  return typeof exclusive === 'boolean' ? Object.freeze({ exclusive, regex, pattern }) : undefined;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value as an error message shows it. */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}
