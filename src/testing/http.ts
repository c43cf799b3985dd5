/**
 * The same scripts over HTTP, in process: a Fastify application is driven with `inject` (no
 * socket), anything else that handles Node requests (an Express application) through a real
 * server listening on an ephemeral port of 127.0.0.1. After each answer the test runtime
 * settles, so the next line sees what the request caused (a child started, a listener run);
 * `advance` moves the same virtual clock the routes read. Neither framework is imported here.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestRuntime } from './test-runtime.js';

/** A Fastify application, as far as the driver uses it. */
export interface InjectableApp {
  inject(options: {
    method: string;
    url: string;
    headers?: Record<string, string>;
    payload?: string;
  }): PromiseLike<{ statusCode: number; headers: Record<string, unknown>; body: string }>;
  ready?(): PromiseLike<unknown>;
}

/** A Node request handler (an Express application is one). */
export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** One request of a test. */
export interface TestRequest {
  /** JSON body (sent with `content-type: application/json`). */
  body?: unknown;
  /** Query parameters, added to the path. */
  query?: Record<string, string | number | boolean>;
  headers?: Record<string, string>;
}

/** An answer: status, lower-case headers, and the body (parsed when it is JSON). */
export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Sends requests to one application, settling the test runtime after each. */
export interface HttpDriver {
  request(method: string, path: string, request?: TestRequest): Promise<TestResponse>;
  get(path: string, request?: TestRequest): Promise<TestResponse>;
  post(path: string, request?: TestRequest): Promise<TestResponse>;
  patch(path: string, request?: TestRequest): Promise<TestResponse>;
  delete(path: string, request?: TestRequest): Promise<TestResponse>;
  /** Stops the listening server (Express); a Fastify application is the caller's to close. */
  close(): Promise<void>;
}

/**
 * A driver of `app` on `runtime`: `app` must serve routes on `runtime.runtime` (the generated
 * plugin's `runtime` option, or a `MachineRouter` made with it).
 *
 * @example
 * const http = await httpDriver(t, app);
 * const created = await http.post('/orders/create');
 */
export async function httpDriver(
  runtime: TestRuntime,
  app: InjectableApp | RequestListener,
): Promise<HttpDriver> {
  const send = isInjectable(app) ? await injector(app) : await listener(app);
  const request = async (method: string, path: string, options: TestRequest = {}) => {
    const url = withQuery(path, options.query);
    const headers = { ...options.headers };
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    try {
      return await send.request(method, url, headers, payload);
    } finally {
      await runtime.settle();
    }
  };
  return {
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, options) => request('POST', path, options),
    patch: (path, options) => request('PATCH', path, options),
    delete: (path, options) => request('DELETE', path, options),
    close: send.close,
  };
}

interface Transport {
  request(
    method: string,
    url: string,
    headers: Record<string, string>,
    payload: string | undefined,
  ): Promise<TestResponse>;
  close(): Promise<void>;
}

function isInjectable(app: InjectableApp | RequestListener): app is InjectableApp {
  return typeof (app as Partial<InjectableApp>).inject === 'function';
}

async function injector(app: InjectableApp): Promise<Transport> {
  await app.ready?.();
  return {
    request: async (method, url, headers, payload) => {
      const answer = await app.inject({
        method,
        url,
        headers,
        ...(payload === undefined ? {} : { payload }),
      });
      const flat: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (value !== undefined) flat[name.toLowerCase()] = String(value);
      return { status: answer.statusCode, headers: flat, body: parse(answer.body, flat) };
    },
    close: async () => {},
  };
}

async function listener(app: RequestListener): Promise<Transport> {
  const server: Server = createServer(app);
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => done());
  });
  const { port } = server.address() as AddressInfo;
  return {
    request: async (method, url, headers, payload) => {
      const answer = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers,
        ...(payload === undefined ? {} : { body: payload }),
      });
      const flat: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        flat[name] = value;
      });
      return { status: answer.status, headers: flat, body: parse(await answer.text(), flat) };
    },
    close: () =>
      new Promise<void>((done, fail) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? done() : fail(error)));
      }),
  };
}

function withQuery(path: string, query: TestRequest['query']): string {
  if (query === undefined) return path;
  const search = new URLSearchParams(
    Object.entries(query).map(([name, value]): [string, string] => [name, String(value)]),
  ).toString();
  return search === '' ? path : `${path}${path.includes('?') ? '&' : '?'}${search}`;
}

function parse(text: string, headers: Record<string, string>): unknown {
  if (text === '' || !(headers['content-type'] ?? '').includes('json')) return text;
  return JSON.parse(text) as unknown;
}
