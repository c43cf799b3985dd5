/**
 * Real listening servers for the HTTP suite: one per adapter, on 127.0.0.1 and a free port.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { mountExpress } from '../../../../src/runtime/http/adapters/express.js';
import { mountFastify } from '../../../../src/runtime/http/adapters/fastify.js';
import type { MountSource } from '../../../../src/runtime/http/adapters/shared.js';
import type { HttpLogger } from '../../../../src/runtime/http/types.js';

export type AdapterName = 'fastify' | 'express';

export interface TestServer {
  url: string;
  /** Fastify's `hasRoute`, or `null` for Express (which has no such query). */
  hasRoute: ((method: string, url: string) => boolean) | null;
  /** The listening Node server (its connections, for tests that look at a socket). */
  http: Server;
  close(): Promise<void>;
}

/** Starts a server mounting each source in turn (as generated code mounts one per registration). */
export async function startServer(
  adapter: AdapterName,
  sources: readonly MountSource[],
  logger: HttpLogger,
): Promise<TestServer> {
  if (adapter === 'fastify') {
    const app = Fastify({ logger: false });
    for (const source of sources) await mountFastify(app, source, { logger });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      hasRoute: (method, url) => app.hasRoute({ method: method as 'GET', url }),
      http: app.server,
      close: () => app.close(),
    };
  }
  const app = express();
  for (const source of sources) mountExpress(app, source, { logger });
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hasRoute: null,
    http: server,
    close: () =>
      new Promise((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      ),
  };
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Sends one request; `body` is JSON-encoded unless `raw` is given. */
export async function send(
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Uint8Array | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : JSON.parse(text),
  };
}
