// A tiny authoritative DNS server over UDP for tests: answers A, AAAA and SRV questions from a table
// that tests may change while it runs, NXDOMAIN for names it does not hold. Point a
// `dns.promises.Resolver` at it with `resolver.setServers([server.address])`.

import { type Socket, createSocket } from 'node:dgram';
import { isIP } from 'node:net';

export interface SrvTarget {
  readonly priority?: number;
  readonly weight?: number;
  readonly port: number;
  readonly target: string;
}

export interface DnsRecords {
  a?: string[];
  aaaa?: string[];
  srv?: SrvTarget[];
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for `Resolver.setServers`. */
  readonly address: string;
  /** Names (lower case) to their records; edit freely. */
  readonly records: Map<string, DnsRecords>;
  /** Every question asked, as `TYPE name`, in order. */
  readonly queries: string[];
  set(name: string, records: DnsRecords): void;
  close(): Promise<void>;
}

const TYPE = { A: 1, AAAA: 28, SRV: 33 } as const;
const TYPE_NAMES: Record<number, string> = { 1: 'A', 28: 'AAAA', 33: 'SRV' };
const NXDOMAIN = 3;
const FORMERR = 1;

/** Reads the name at `offset` (queries carry no compression pointers), or undefined if malformed. */
function readName(msg: Buffer, offset: number): { name: string; end: number } | undefined {
  const labels: string[] = [];
  let i = offset;
  while (i < msg.length) {
    const len = msg[i]!;
    if (len === 0) return { name: labels.join('.'), end: i + 1 };
    if (len > 63 || i + 1 + len > msg.length) return undefined;
    labels.push(msg.toString('latin1', i + 1, i + 1 + len));
    i += 1 + len;
  }
  return undefined;
}

function encodeName(name: string): Buffer {
  const parts = name.replace(/\.$/, '').split('.').filter((l) => l !== '');
  return Buffer.concat([...parts.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])), Buffer.from([0])]);
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

function answer(type: number, rdata: Buffer): Buffer {
  // Name: a pointer to the question's name at offset 12; class IN; TTL 60 s.
  const head = Buffer.alloc(10);
  head.writeUInt16BE(0xc00c, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt32BE(60, 6);
  return Buffer.concat([head, u16(rdata.length), rdata]);
}

function ipv6Bytes(ip: string): Buffer {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

function answers(type: number, records: DnsRecords): Buffer[] {
  switch (type) {
    case TYPE.A:
      return (records.a ?? []).filter((ip) => isIP(ip) === 4).map((ip) => answer(type, Buffer.from(ip.split('.').map(Number))));
    case TYPE.AAAA:
      return (records.aaaa ?? []).filter((ip) => isIP(ip) === 6).map((ip) => answer(type, ipv6Bytes(ip)));
    case TYPE.SRV:
      return (records.srv ?? []).map((s) =>
        answer(type, Buffer.concat([u16(s.priority ?? 10), u16(s.weight ?? 0), u16(s.port), encodeName(s.target)])),
      );
    default:
      return [];
  }
}

function reply(query: Buffer, table: Map<string, DnsRecords>, log: string[]): Buffer | undefined {
  if (query.length < 12) return undefined;
  const id = query.readUInt16BE(0);
  const flags = query.readUInt16BE(2);
  if (flags & 0x8000) return undefined; // a response, not a question
  const rd = flags & 0x0100;
  const header = (rcode: number, ancount: number) => {
    const h = Buffer.alloc(12);
    h.writeUInt16BE(id, 0);
    // QR, AA, the query's opcode and RD, then the response code.
    h.writeUInt16BE(0x8400 | (flags & 0x7800) | rd | rcode, 2);
    h.writeUInt16BE(1, 4);
    h.writeUInt16BE(ancount, 6);
    return h;
  };
  const q = query.readUInt16BE(4) === 1 ? readName(query, 12) : undefined;
  if (q === undefined || q.end + 4 > query.length) {
    const h = header(FORMERR, 0);
    h.writeUInt16BE(0, 4);
    return h;
  }
  const question = query.subarray(12, q.end + 4);
  const type = query.readUInt16BE(q.end);
  const name = q.name.toLowerCase();
  log.push(`${TYPE_NAMES[type] ?? type} ${name}`);
  const records = table.get(name);
  if (records === undefined) return Buffer.concat([header(NXDOMAIN, 0), question]);
  const rrs = answers(type, records);
  return Buffer.concat([header(0, rrs.length), question, ...rrs]);
}

/** Starts the server on 127.0.0.1 and a free port. */
export async function startDnsServer(initial: Record<string, DnsRecords> = {}): Promise<TestDnsServer> {
  const records = new Map(Object.entries(initial).map(([k, v]) => [k.toLowerCase(), v]));
  const queries: string[] = [];
  const socket: Socket = createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    const out = reply(msg, records, queries);
    if (out !== undefined) socket.send(out, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', reject);
      resolve();
    });
  });
  return {
    address: `127.0.0.1:${socket.address().port}`,
    records,
    queries,
    set(name, r) {
      records.set(name.toLowerCase(), r);
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
