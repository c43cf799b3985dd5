/**
 * The generated app's server limits, on both frameworks: a client trickling its body is cut off
 * with 408 once the request timeout passes, instead of holding the connection forever. Requests
 * Node's HTTP parser refuses before any route runs (408, headers over 16 KiB: 431, not HTTP:
 * 400) answer the documented error body `{ message }` as JSON, not Fastify's
 * `{ error, message, statusCode }` or Node's empty body.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import {
  DEFAULT_HEADERS_TIMEOUT,
  DEFAULT_REQUEST_TIMEOUT,
} from '../../src/runtime/http/server-options.js';
import { buildApp as buildFastifyApp } from '../../generated-example/app.gen.js';
import { buildApp as buildExpressApp } from './__snapshots__/express/app.gen.js';

/**
 * Sends the headers of a 100-byte POST, then one body byte every 100 ms, and resolves with what
 * the server answered once it closed the connection.
 */
function trickle(baseUrl: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    const timer = setInterval(() => socket.write('x'), 100);
    socket.on('connect', () => {
      socket.write(
        `POST /orders/create HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
      );
    });
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve(answer);
    });
    setTimeout(() => reject(new Error('the server kept the connection open')), 15_000).unref();
  });
}

/** Writes `request` raw and resolves with what the server answered once it closed the connection. */
function raw(baseUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    setTimeout(() => reject(new Error('the server kept the connection open')), 15_000).unref();
  });
}

/** Status, lower-cased headers and parsed body of a raw HTTP/1.1 answer. */
function parseAnswer(answer: string): {
  status: number;
  headers: Record<string, string>;
  body: unknown;
} {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  let parsed: unknown = body;
  try {
    parsed = JSON.parse(body);
  } catch {
    // left as text: the assertion shows it
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: parsed };
}

describe.each([
  ['fastify', buildFastifyApp],
  ['express', buildExpressApp],
] as const)('requests the HTTP parser of the generated %s app refuses', (_framework, buildApp) => {
  it.each([
    [
      'a header over 16 KiB',
      `POST /orders/create HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
    ],
    ['an unknown method', 'FOO /orders/create HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['a request line that is not HTTP', 'hello there\r\n\r\n', 400],
  ])(
    'should answer %s with its status and a { message } JSON body',
    async (_case, request, status) => {
      const app = await buildApp({ databaseUrl: 'sqlite::memory:', worker: false });
      try {
        const answer = parseAnswer(await raw(await app.listen(0), request));
        expect(answer.status).toBe(status);
        expect(answer.headers['content-type']).toMatch(/^application\/json/);
        expect(answer.body).toEqual({ message: expect.any(String) });
      } finally {
        await app.close();
      }
    },
  );
});

describe.each([
  ['fastify', buildFastifyApp],
  ['express', buildExpressApp],
] as const)('server limits of the generated %s app', (_framework, buildApp) => {
  it('should close a connection whose body trickles past the request timeout, with 408 { message }', async () => {
    const app = await buildApp({
      databaseUrl: 'sqlite::memory:',
      worker: false,
      server: { requestTimeout: 1_000, headersTimeout: 500 },
    });
    try {
      const answer = parseAnswer(await trickle(await app.listen(0)));
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({ message: expect.any(String) });
    } finally {
      await app.close();
    }
  }, 20_000);
});

it('should set the default timeouts on the generated Fastify server', async () => {
  const app = await buildFastifyApp({ databaseUrl: 'sqlite::memory:', worker: false });
  try {
    const server = (app.app as FastifyInstance).server;
    expect(server.requestTimeout).toBe(DEFAULT_REQUEST_TIMEOUT);
    expect(server.headersTimeout).toBe(DEFAULT_HEADERS_TIMEOUT);
  } finally {
    await app.close();
  }
});
