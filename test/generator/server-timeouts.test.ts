/**
 * The generated app's server limits, on both frameworks: a client trickling its body is cut off
 * with 408 once the request timeout passes, instead of holding the connection forever.
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

describe.each([
  ['fastify', buildFastifyApp],
  ['express', buildExpressApp],
] as const)('server limits of the generated %s app', (_framework, buildApp) => {
  it('should close a connection whose body trickles past the request timeout, with 408', async () => {
    const app = await buildApp({
      databaseUrl: 'sqlite::memory:',
      worker: false,
      server: { requestTimeout: 1_000, headersTimeout: 500 },
    });
    try {
      const answer = await trickle(await app.listen(0));
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
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
