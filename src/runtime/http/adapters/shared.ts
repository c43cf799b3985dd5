/**
 * What both adapters share: the mounted-route source, 405 bookkeeping and the conversion of
 * a neutral response into status, headers and body.
 */
import type { HttpMethod } from '../../definition/types.js';
import type { MachineRouter, MountedRoute } from '../machine-router.js';
import type { EndpointRequest, HttpLogger } from '../types.js';
import { DEFAULT_BODY_LIMIT } from '../request-parsing.js';

/** What an adapter mounts: a router, or routes plus the body limit. */
export type MountSource = MachineRouter | { routes: readonly MountedRoute[]; bodyLimit?: number };

/** Options shared by `mountFastify` and `mountExpress`. */
export interface MountOptions {
  /**
   * Answer unknown routes with the layer's JSON 404 `{ message: 'Not Found.' }`
   * (default true). Turn it off when the application has its own not-found handling.
   */
  notFound?: boolean;
}

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function sourceRoutes(source: MountSource): {
  routes: readonly MountedRoute[];
  bodyLimit: number;
} {
  return { routes: source.routes, bodyLimit: source.bodyLimit ?? DEFAULT_BODY_LIMIT };
}

/**
 * For every planned path, the methods it answers and the ones it must refuse with 405.
 * Paths that differ only in parameter names (`/{machineId}/x`, `/{order}/x`) are one path to
 * the router, so they are grouped; the first planned spelling is the one the 405 route uses.
 */
export function methodsByPath(
  routes: readonly MountedRoute[],
): { path: string; allowed: HttpMethod[]; refused: HttpMethod[] }[] {
  const byShape = new Map<string, { path: string; methods: Set<HttpMethod> }>();
  for (const { route } of routes) {
    const shape = route.path.replace(/\{[^}]+\}/g, '{}');
    const group = byShape.get(shape) ?? { path: route.path, methods: new Set<HttpMethod>() };
    group.methods.add(route.method);
    byShape.set(shape, group);
  }
  return [...byShape.values()].map(({ path, methods }) => ({
    path,
    allowed: METHODS.filter((method) => methods.has(method)),
    refused: METHODS.filter((method) => !methods.has(method)),
  }));
}

/** The `Allow` header of a path: its methods, plus HEAD where GET is served. */
export function allowHeader(allowed: readonly HttpMethod[]): string {
  return (allowed.includes('GET') ? [...allowed, 'HEAD'] : [...allowed]).join(', ');
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
 * A neutral request whose `headers` are `neutralHeaders(raw)` computed on first read: most
 * routes (no middleware, no action hooks) never look at them, and copying them is a visible
 * share of a request's cost.
 */
export function endpointRequest(
  fields: Omit<EndpointRequest, 'headers' | 'log'>,
  raw: Record<string, string | string[] | undefined>,
  frameworkLog?: () => HttpLogger | undefined,
): EndpointRequest {
  return new AdapterRequest(fields, raw, frameworkLog);
}

/**
 * A class rather than an object literal with `get headers()`: a literal's accessors are new
 * closures in every request, so every request had a hidden class of its own (about 3 us per
 * request, and the handlers reading it went megamorphic). The accessors live on the prototype.
 */
class AdapterRequest implements EndpointRequest {
  method: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  #headers: Record<string, string | undefined> | undefined = undefined;
  readonly #raw: Record<string, string | string[] | undefined>;
  readonly #frameworkLog: (() => HttpLogger | undefined) | undefined;

  constructor(
    fields: Omit<EndpointRequest, 'headers' | 'log'>,
    raw: Record<string, string | string[] | undefined>,
    frameworkLog: (() => HttpLogger | undefined) | undefined,
  ) {
    this.method = fields.method;
    this.params = fields.params;
    this.query = fields.query;
    this.body = fields.body;
    this.#raw = raw;
    this.#frameworkLog = frameworkLog;
  }

  // Made on first use (an unexpected error): most requests never log.
  get log(): HttpLogger | undefined {
    return this.#frameworkLog?.();
  }

  get headers(): Record<string, string | undefined> {
    return (this.#headers ??= neutralHeaders(this.#raw));
  }

  set headers(value: Record<string, string | undefined>) {
    this.#headers = value;
  }
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
