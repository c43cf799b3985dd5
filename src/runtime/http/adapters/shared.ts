/**
 * What both adapters share: the mounted-route source, 405 bookkeeping and the conversion of
 * a neutral response into status, headers and body.
 */
import type { Server, Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { HttpMethod } from '../../definition/types.js';
import type { MachineRouter, MountedOptionsRoute, MountedRoute } from '../machine-router.js';
import { allowValue, pathShape } from '../instance-surface.js';
import type { EndpointRequest, HttpLogger } from '../types.js';
import { DEFAULT_BODY_LIMIT, parseQueryString, UnreadableBody } from '../request-parsing.js';
import { endStateStreams } from '../state-stream.js';

/**
 * What an adapter mounts: a router, or routes plus the body limit (and the OPTIONS routes of
 * their paths, `router.optionsRoutes`; without them OPTIONS is not answered, a 404).
 */
export type MountSource =
  | MachineRouter
  | {
      routes: readonly MountedRoute[];
      optionsRoutes?: readonly MountedOptionsRoute[];
      bodyLimit?: number;
    };

/** Options shared by `mountFastify` and `mountExpress`. */
export interface MountOptions {
  /**
   * Answer unknown routes with the layer's JSON 404 `{ message: 'Not Found.' }`
   * (default true). Turn it off when the application has its own not-found handling.
   */
  notFound?: boolean;
}

/** Methods a known path may refuse with 405 (OPTIONS is routed on every path or on none). */
const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A mounted route of either kind, as far as the 405 bookkeeping reads it. */
export type AnyMountedRoute = MountedRoute | MountedOptionsRoute;

export function sourceRoutes(source: MountSource): {
  routes: readonly AnyMountedRoute[];
  bodyLimit: number;
} {
  return {
    routes: [...source.routes, ...(source.optionsRoutes ?? [])],
    bodyLimit: source.bodyLimit ?? DEFAULT_BODY_LIMIT,
  };
}

/**
 * For every planned path, the methods it answers and the ones it must refuse with 405.
 * Paths that differ only in parameter names (`/{machineId}/x`, `/{order}/x`) are one path to
 * the router, so they are grouped; the first planned spelling is the one the 405 route uses.
 * `allowed` lists OPTIONS where an OPTIONS route is mounted; it is never refused.
 */
export function methodsByPath(
  routes: readonly AnyMountedRoute[],
): { path: string; allowed: string[]; refused: HttpMethod[] }[] {
  const byShape = new Map<string, { path: string; methods: Set<string> }>();
  for (const { route } of routes) {
    const shape = pathShape(route.path);
    const group = byShape.get(shape) ?? { path: route.path, methods: new Set<string>() };
    group.methods.add(route.method);
    byShape.set(shape, group);
  }
  return [...byShape.values()].map(({ path, methods }) => ({
    path,
    allowed: [...METHODS, 'OPTIONS'].filter((method) => methods.has(method)),
    refused: METHODS.filter((method) => !methods.has(method)),
  }));
}

/** The `Allow` header of a path: its methods, HEAD where GET is served, OPTIONS last. */
export function allowHeader(allowed: readonly string[]): string {
  return allowValue(allowed);
}

/** Node's header object in the neutral form: lower-case names, one string per header. */
export function neutralHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | undefined> {
  const result: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    result[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return result;
}

/**
 * The neutral request of a framework's request. What most routes never read is made on first
 * read: `headers` (no middleware, no action hooks: copying them was a visible share of a
 * request's cost), `params` (a copy, so a handler cannot change the framework's; stateless
 * routes have none to read) and the logger. A query string is parsed here, at once, so that a
 * malformed one is a 400 on every route, whether or not the route reads it; a URL without one
 * gets its empty object on first read.
 */
export function endpointRequest<Source>(
  method: string,
  params: Record<string, string>,
  query: string,
  body: unknown,
  headers: Record<string, string | string[] | undefined>,
  source: Source,
  log: (source: Source) => HttpLogger | undefined,
): EndpointRequest {
  return new AdapterRequest(method, params, query, body, headers, source, log);
}

/**
 * A class rather than an object literal with `get headers()`: a literal's accessors are new
 * closures in every request, so every request had a hidden class of its own (about 3 us per
 * request, and the handlers reading it went megamorphic). The accessors live on the prototype.
 */
class AdapterRequest<Source> implements EndpointRequest {
  method: string;
  #body: unknown;
  #params: Record<string, string> | undefined = undefined;
  #query: Record<string, unknown> | undefined;
  #headers: Record<string, string | undefined> | undefined = undefined;
  readonly #rawParams: Record<string, string>;
  readonly #rawHeaders: Record<string, string | string[] | undefined>;
  readonly #source: Source;
  readonly #log: (source: Source) => HttpLogger | undefined;
  #id: string | undefined = undefined;

  constructor(
    method: string,
    params: Record<string, string>,
    query: string,
    body: unknown,
    headers: Record<string, string | string[] | undefined>,
    source: Source,
    log: (source: Source) => HttpLogger | undefined,
  ) {
    this.method = method;
    this.#body = body;
    this.#rawParams = params;
    this.#query = query === '' ? undefined : parseQueryString(query);
    this.#rawHeaders = headers;
    this.#source = source;
    this.#log = log;
  }

  /**
   * The parsed body. A body the parser could not read ({@link UnreadableBody}) throws its 400 or
   * 415 here, where a handler (or a middleware) first reads it: after the route middleware.
   */
  get body(): unknown {
    const body = this.#body;
    if (body instanceof UnreadableBody) throw body.error;
    return body;
  }

  set body(value: unknown) {
    this.#body = value;
  }

  get params(): Record<string, string> {
    return (this.#params ??= { ...this.#rawParams });
  }

  set params(value: Record<string, string>) {
    this.#params = value;
  }

  get query(): Record<string, unknown> {
    return (this.#query ??= {});
  }

  set query(value: Record<string, unknown>) {
    this.#query = value;
  }

  // Made on first use (an unexpected error): most requests never log.
  get log(): HttpLogger | undefined {
    return this.#log(this.#source);
  }

  // Made on first use (a log line): most requests never log.
  get id(): string {
    return (this.#id ??= requestIdOf(this.#source, this.#rawHeaders));
  }

  rawBody(): Buffer | undefined {
    return (this.#source as { [RAW_BODY]?: Buffer } | null)?.[RAW_BODY];
  }

  header(name: string): string | undefined {
    if (this.#headers !== undefined) return this.#headers[name];
    const value = this.#rawHeaders[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  get headers(): Record<string, string | undefined> {
    return (this.#headers ??= neutralHeaders(this.#rawHeaders));
  }

  set headers(value: Record<string, string | undefined>) {
    this.#headers = value;
  }
}

/**
 * The bytes of a JSON body as received, on the framework's request: webhooks sign them. A
 * property rather than a WeakMap entry: an entry per request cost every request a hash-table
 * insertion and the young-generation collections an ephemeron table to scan.
 */
const RAW_BODY = Symbol('machine-routes raw body');

/**
 * Keeps the bytes of `source`'s body for {@link EndpointRequest.rawBody} (adapters call it as
 * they read a JSON body), so a signature is checked over what was sent, not a re-serialisation.
 */
export function keepRawBody(source: object, body: Buffer): void {
  (source as { [RAW_BODY]?: Buffer })[RAW_BODY] = body;
}

let requestCount = 0;
const REQUEST_ID_PREFIX = Math.random().toString(36).slice(2, 8);

/** The framework's id of a request (Fastify, pino-http), else `x-request-id`, else a new one. */
function requestIdOf(
  source: unknown,
  headers: Record<string, string | string[] | undefined>,
): string {
  const own = (source as { id?: unknown } | null)?.id;
  if (typeof own === 'string' || typeof own === 'number') return String(own);
  const header = headers['x-request-id'];
  if (typeof header === 'string' && header !== '') return header.slice(0, 200);
  requestCount += 1;
  return `${REQUEST_ID_PREFIX}-${requestCount}`;
}

/** The query string of a raw request URL, without the `?`. */
export function rawQuery(url: string | undefined): string {
  const index = (url ?? '').indexOf('?');
  return index === -1 ? '' : (url ?? '').slice(index + 1);
}

/**
 * The 404 message of a URL that is not valid percent-encoded UTF-8: it names no machine, and
 * every operation of the OpenAPI document lists 404 (reads list no 400).
 */
export const MALFORMED_URL_MESSAGE = 'Not Found: the URL is not valid percent-encoded UTF-8.';

/** Open stream bodies by HTTP server, whichever adapter answers them (state streams: state-stream.ts). */
const openStreams = new WeakMap<object, Set<Readable>>();

/**
 * Records a stream answered on `server` until it closes: {@link endStreams} ends it when the
 * server shuts down (else a client following an instance would hold its connection open).
 */
export function trackStream(server: object | undefined | null, stream: Readable): void {
  if (server === undefined || server === null) return;
  let streams = openStreams.get(server);
  if (streams === undefined) openStreams.set(server, (streams = new Set()));
  streams.add(stream);
  stream.once('close', () => streams.delete(stream));
}

/** Ends every open stream of `server` (its clients reconnect, with `Last-Event-ID`, elsewhere). */
export function endStreams(server: object): void {
  for (const stream of openStreams.get(server) ?? []) stream.destroy();
  endStateStreams(server);
}

const closingServers = new WeakSet<Server>();

/**
 * Makes `server.close()` first end the server's open state streams and destroy its connections
 * that have not sent a byte, as the Fastify adapter's `preClose` hook does. Express has no close
 * hook, and an application that mounts the routes on its own server closes it with a plain
 * `close()`: that waited for each stream's client, and, once a fetch() client had aborted its
 * stream, for the fresh connection undici opens then and only drops when its keep-alive time
 * runs out (about 3 s against Node's default 5 s `keepAliveTimeout`). Installed once per server,
 * at its first stream.
 */
export function endStreamsOnClose(server: Server): void {
  if (closingServers.has(server)) return;
  closingServers.add(server);
  const silent = silentConnections(server);
  const close = server.close;
  server.close = function (this: Server, callback?: (error?: Error) => void) {
    endStreams(server);
    silent.destroy();
    return close.call(this, callback);
  };
}

/**
 * Connections that have not sent a byte, destroyed on close. fetch() (undici) opens a fresh
 * connection when one of its streams is aborted, and sends nothing on it: Node's close() waits
 * for such a connection (closeIdleConnections only closes ones that finished a request), so an
 * app whose state stream a fetch() client left never finished closing. Nothing is lost: no
 * request was made on them.
 */
export function silentConnections(server: Server): { destroy(): void } {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    destroy: () => {
      for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
    },
  };
}
