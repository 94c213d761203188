// HTTP clients for the benchmarks, over keep-alive connections: each call sends one JSON request
// and resolves with the status and the parsed JSON reply. Per request, the raw client costs the
// calling process about half what node:http does, and node:http about a third of what fetch does.

import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export type Call = (method: string, path: string, token: string | undefined, body?: unknown) => Promise<Reply>;

/** node:http with a keep-alive Agent of `maxSockets` sockets. */
export function httpClient(baseUrl: string, maxSockets: number): Call {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets });
  return (method, path, token, body) =>
    new Promise<Reply>((done, fail) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = {};
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const req = request({ host: url.hostname, port: url.port, method, path, agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
        res.on('error', fail);
      });
      req.on('error', fail);
      req.end(payload);
    });
}

/**
 * A minimal HTTP/1.1 client over keep-alive sockets: writes the request in one piece and reads a
 * response with a content-length (all the server sends for these routes). It costs the bench
 * process about half what node:http does per request.
 */
export function rawClient(baseUrl: string): Call {
  const url = new URL(baseUrl);
  const port = Number(url.port);
  const idle: Socket[] = [];
  return (method, path, token, body) =>
    new Promise<Reply>((done, fail) => {
      const payload = body === undefined ? '' : JSON.stringify(body);
      let head = `${method} ${path} HTTP/1.1\r\nhost: ${url.host}\r\n`;
      if (token !== undefined) head += `authorization: Bearer ${token}\r\n`;
      if (body !== undefined) head += `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
      const socket = idle.pop() ?? connect(port, url.hostname).setNoDelay(true);
      let received: Buffer = Buffer.alloc(0);
      const finish = (err: Error | undefined, reply?: Reply) => {
        socket.off('data', onData);
        socket.off('error', finish);
        if (err !== undefined) {
          socket.destroy();
          fail(err);
          return;
        }
        idle.push(socket);
        done(reply!);
      };
      const onData = (chunk: Buffer) => {
        received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headers = received.toString('latin1', 0, end);
        const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
        if (length === null) return finish(new Error(`a response without content-length: ${headers}`));
        const bodyEnd = end + 4 + Number(length[1]);
        if (received.length < bodyEnd) return;
        const status = Number(headers.slice(9, 12));
        finish(undefined, { status, body: JSON.parse(received.toString('utf8', end + 4, bodyEnd)) as Record<string, unknown> });
      };
      socket.on('data', onData);
      socket.on('error', finish);
      socket.write(`${head}\r\n${payload}`);
    });
}

/** The global fetch (undici underneath), which keeps connections alive by itself. */
export function fetchClient(baseUrl: string): Call {
  return async (method, path, token, body) => {
    const headers: Record<string, string> = {};
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
}
