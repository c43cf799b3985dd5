/**
 * The client runtime: the only code a generated client imports. `generate` emits a copy of
 * this file beside the client (`client-runtime.gen.ts`) so frontends need nothing else.
 *
 * It must stay free of server code: it imports nothing at all, and a test walks the import
 * graph of the generated client to keep it that way.
 */

/** Headers to send, or a function computing them per request (for short-lived tokens). */
export type HeadersInit =
  Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

/**
 * Options of a generated client. Optional fields also take `undefined`, so callers compiled
 * with exactOptionalPropertyTypes can pass a value that may be missing.
 */
export interface ClientOptions {
  /** Base URL of the API, e.g. `http://localhost:3000`; route paths are appended to it. */
  baseUrl: string;
  /** Headers sent with every request. */
  headers?: HeadersInit | undefined;
  /** Returns a bearer token; sent as `Authorization: Bearer <token>` when it returns one. */
  auth?: (() => string | null | undefined | Promise<string | null | undefined>) | undefined;
  /** The fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch | undefined;
}

/** Per-call options of a client method. */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  headers?: Record<string, string> | undefined;
}

/** A route as the generated client describes it. */
export interface RouteSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path with `{param}` placeholders, filled from the method's input. */
  path: string;
  /** Event type sent in the body; `null` for create (no body). */
  event: string | null;
  /** Whether the method takes an input (path parameters or a payload) before the options. */
  input: boolean;
  /** Statuses the route is documented to answer with; any other one throws. */
  statuses: readonly number[];
}

/** What a method of a route with parameters or a payload takes. */
export interface RouteInput {
  payload?: unknown;
  /** A scenario slug, or `null` to deactivate the kept one (servers with scenarios enabled). */
  scenario?: string | null;
  /** Parameters of the scenario. */
  scenarioParams?: Record<string, unknown>;
  [param: string]: unknown;
}

/** A documented answer: `ok` for 2xx, `status` discriminates the body type. */
export interface ClientResponse<TStatus extends number, TBody> {
  ok: TStatus extends 200 | 201 | 202 | 204 ? true : false;
  status: TStatus;
  body: TBody;
}

/** A client method: `(input, options?)`, or `(options?)` for a route that takes no input. */
export type RouteMethod<TInput extends RouteInput | null, TResult> = TInput extends RouteInput
  ? (input: TInput, options?: RequestOptions) => Promise<TResult>
  : (options?: RequestOptions) => Promise<TResult>;

/** The server answered with a status the route does not document, or with a non-JSON body. */
export class UnexpectedResponseError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    super(`Unexpected response status ${status}`);
    this.name = 'UnexpectedResponseError';
    this.status = status;
    this.body = body;
  }
}

function appendQuery(url: URL, query: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(Array.isArray(value) ? `${key}[]` : key, String(item));
    }
  }
}

function fillPath(path: string, input: RouteInput): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(input[name])));
}

/**
 * Builds the method factory of a client: `method(spec)` returns the function that sends one
 * route's request and resolves with its documented answer.
 */
export function createRouteMethods(options: ClientOptions) {
  const fetchImpl = options.fetch ?? globalThis.fetch;

  async function send(spec: RouteSpec, input: RouteInput, call: RequestOptions = {}) {
    // A relative base URL ('/api') resolves against the page in a browser.
    const page = (globalThis as { location?: { href: string } }).location?.href;
    const url = new URL(options.baseUrl.replace(/\/+$/, '') + fillPath(spec.path, input), page);
    const headers: Record<string, string> = { accept: 'application/json' };
    Object.assign(
      headers,
      typeof options.headers === 'function' ? await options.headers() : options.headers,
    );
    const token = await options.auth?.();
    if (token) headers['authorization'] = `Bearer ${token}`;
    Object.assign(headers, call.headers);
    let body: string | undefined;
    if (spec.method === 'GET') {
      // GET endpoints read their payload from the query string.
      if (input.payload !== undefined) appendQuery(url, input.payload as Record<string, unknown>);
      // A query has no null: an empty `scenario=` deactivates the kept scenario.
      if (input.scenario !== undefined) url.searchParams.append('scenario', input.scenario ?? '');
      for (const [key, value] of Object.entries(input.scenarioParams ?? {}))
        url.searchParams.append(`scenarioParams[${key}]`, String(value));
    } else if (spec.event !== null) {
      headers['content-type'] = 'application/json';
      const request: Record<string, unknown> = { type: spec.event };
      if (input.payload !== undefined) request['payload'] = input.payload;
      if (input.scenario !== undefined) request['scenario'] = input.scenario;
      if (input.scenarioParams !== undefined) request['scenarioParams'] = input.scenarioParams;
      body = JSON.stringify(request);
    }
    // Only the fields that are set: under exactOptionalPropertyTypes (the @tsconfig/strictest
    // settings) RequestInit's optional fields do not accept `undefined`.
    const init: RequestInit = { method: spec.method, headers };
    if (body !== undefined) init.body = body;
    if (call.signal !== undefined) init.signal = call.signal;
    const response = await fetchImpl(url, init);
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      throw new UnexpectedResponseError(response.status, text);
    }
    if (!spec.statuses.includes(response.status))
      throw new UnexpectedResponseError(response.status, parsed);
    return {
      ok: response.status >= 200 && response.status < 300,
      status: response.status,
      body: parsed,
    };
  }

  return function method<TInput extends RouteInput | null, TResult>(
    spec: RouteSpec,
  ): RouteMethod<TInput, TResult> {
    const call = spec.input
      ? (input: RouteInput, options?: RequestOptions) => send(spec, input, options)
      : (options?: RequestOptions) => send(spec, {}, options);
    return call as unknown as RouteMethod<TInput, TResult>;
  };
}
