// Server names (appendix "Server Name"): `hostname [":" port]`, where the hostname is a DNS name,
// an IPv4 dotted quad or a bracketed IPv6 literal. Server names are case-sensitive.

import { type Branded, type ParseOptions, checked } from './common.js';

export type ServerName = Branded<'ServerName'>;

export type ServerNameKind = 'dns' | 'ipv4' | 'ipv6';

export interface ServerNameParts {
  readonly serverName: ServerName;
  /** The hostname; an IPv6 literal comes without its brackets, ready for a socket. */
  readonly host: string;
  readonly port?: number;
  readonly kind: ServerNameKind;
}

/** The grammar caps a DNS name at 255 characters; the whole server name gets the same cap. */
export const MAX_SERVER_NAME_LENGTH = 255;

const DNS_NAME = /^[A-Za-z0-9.-]+$/;
const IPV4_SHAPE = /^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/;
const DEC_OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
const PORT = /^[0-9]{1,5}$/;

/**
 * A dotted quad of numbers 0–255. Leading zeros are refused: some resolvers read `010` as octal,
 * so such a name would not mean one address.
 */
export function isIpv4Literal(s: string): boolean {
  if (!IPV4_SHAPE.test(s)) return false;
  return s.split('.').every((o) => DEC_OCTET.test(o) && Number(o) <= 255);
}

/** An IPv6 address in the text forms of RFC 3513 §2.2 (no brackets, no zone). */
export function isIpv6Literal(s: string): boolean {
  if (s.length < 2 || s.length > 45) return false;
  const gap = s.indexOf('::');
  if (gap !== -1 && s.indexOf('::', gap + 1) !== -1) return false;
  const head = gap === -1 ? s : s.slice(0, gap);
  const tail = gap === -1 ? '' : s.slice(gap + 2);
  const pieces = [...(head === '' ? [] : head.split(':')), ...(tail === '' ? [] : tail.split(':'))];
  // An embedded IPv4 address may only be the last thing in the text, and counts as two groups.
  const ipv4Allowed = gap === -1 || tail !== '';
  let groups = 0;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if (HEX_GROUP.test(piece)) groups += 1;
    else if (ipv4Allowed && i === pieces.length - 1 && isIpv4Literal(piece)) groups += 2;
    else return false;
  }
  // `::` stands for at least one group of zeros.
  return gap === -1 ? groups === 8 : groups <= 7;
}

interface Split {
  readonly host: string;
  readonly port?: number;
  readonly kind: ServerNameKind;
}

function split(s: string): Split | string {
  if (s.length === 0) return 'is empty';
  if (s.length > MAX_SERVER_NAME_LENGTH) {
    return `is ${s.length} characters long; the limit is ${MAX_SERVER_NAME_LENGTH}`;
  }
  let host: string;
  let rest: string;
  let kind: ServerNameKind;
  if (s[0] === '[') {
    const close = s.indexOf(']');
    if (close === -1) return "has '[' without a closing ']'";
    host = s.slice(1, close);
    if (!isIpv6Literal(host)) return 'has an invalid IPv6 literal';
    rest = s.slice(close + 1);
    kind = 'ipv6';
  } else {
    const colon = s.indexOf(':');
    if (colon !== -1 && s.indexOf(':', colon + 1) !== -1) {
      return 'has more than one colon (an IPv6 literal must be in brackets)';
    }
    host = colon === -1 ? s : s.slice(0, colon);
    rest = colon === -1 ? '' : s.slice(colon);
    if (host.length === 0) return 'has an empty hostname';
    if (IPV4_SHAPE.test(host)) {
      if (!isIpv4Literal(host)) return 'has an invalid IPv4 literal (numbers 0–255, no leading zeros)';
      kind = 'ipv4';
    } else {
      if (!DNS_NAME.test(host)) return 'may hold only letters, digits, "-" and "." in a DNS name';
      kind = 'dns';
    }
  }
  if (rest === '') return { host, kind };
  if (rest[0] !== ':') return "has text after ']' that is not a port";
  const digits = rest.slice(1);
  const port = Number(digits);
  if (!PORT.test(digits) || port < 1 || port > 65535) return 'has a port that is not a number 1–65535';
  return { host, port, kind };
}

/** Why `s` is not a server name, or undefined when it is one. */
export function serverNameProblem(s: string): string | undefined {
  const r = split(s);
  return typeof r === 'string' ? r : undefined;
}

export function parseServerName(input: unknown, opts?: ParseOptions): ServerName {
  return checked('server name', input, serverNameProblem, opts) as ServerName;
}

export function isServerName(input: unknown): input is ServerName {
  return typeof input === 'string' && serverNameProblem(input) === undefined;
}

export function tryParseServerName(input: unknown): ServerName | undefined {
  return isServerName(input) ? input : undefined;
}

/** Parses a server name and returns its hostname, port and kind of hostname. */
export function parseServerNameParts(input: unknown, opts?: ParseOptions): ServerNameParts {
  const serverName = parseServerName(input, opts);
  const r = split(serverName) as Split;
  return r.port === undefined
    ? { serverName, host: r.host, kind: r.kind }
    : { serverName, host: r.host, port: r.port, kind: r.kind };
}
