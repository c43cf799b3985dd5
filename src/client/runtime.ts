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

/** `fetch`'s `credentials`: whether cookies go with the request (`include` for another origin). */
export type Credentials = 'omit' | 'same-origin' | 'include';

/**
 * Retrying a 423 answer (the instance was processing another event, so this one was refused
 * and not applied: sending it again is safe). Only a 423 whose snapshot says
 * `isProcessing: true` is retried. The pause before retry `n` (from 0) is
 * `min(maxDelay, delay * 2^n)`, its second half drawn at random so that clients refused
 * together do not come back together; after `retries` retries the 423 is the answer.
 */
export interface RetryOnLocked {
  /** Retries after the first try (default 3). */
  retries?: number | undefined;
  /** Pause before the first retry in ms (default 100), doubled at each retry. */
  delay?: number | undefined;
  /** Longest pause between two tries in ms (default 2000). */
  maxDelay?: number | undefined;
}

/**
 * Retrying a 429 of flow control (the route's `flow`: too many requests of a key in flight or
 * over its rate; nothing was sent, so sending again is safe): after the answer's `Retry-After`,
 * at most `retries` times. A `Retry-After` longer than `maxWait` is the answer at once, and a
 * debounced request (429 without `Retry-After`: a later one of its key is the one sent) is never
 * sent again.
 */
export interface RetryOnLimited {
  /** Retries after the first try (default 3). */
  retries?: number | undefined;
  /** Longest `Retry-After` waited for, in ms (default 10000). */
  maxWait?: number | undefined;
}

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
  /** The fetch implementation (default: the global `fetch`, looked up at each request). */
  fetch?: typeof fetch | undefined;
  /** `credentials` of every request (default: fetch's own, `same-origin`). */
  credentials?: Credentials | undefined;
  /**
   * Throw {@link ClientResponseError} on every documented answer that is not 2xx (4xx, 423,
   * 5xx) instead of resolving with it: methods then resolve with the success answers only.
   * What a TanStack mutation needs for its `onError` to fire. Default false.
   */
  throwOnError?: boolean | undefined;
  /** Retry 423 answers (`true`: the defaults of {@link RetryOnLocked}). Default false. */
  retryOnLocked?: boolean | RetryOnLocked | undefined;
  /** Retry 429 answers after their Retry-After (`true`: the defaults of {@link RetryOnLimited}). Default false. */
  retryOnLimited?: boolean | RetryOnLimited | undefined;
  /**
   * Middleware of every request, run in order: `request` before each try (tracing headers,
   * logging), `response` once its answer is read (logging, token refresh: answer `'retry'` to
   * send the request once more). See {@link ClientInterceptor}.
   */
  interceptors?: readonly ClientInterceptor[] | undefined;
}

/** The request an interceptor sees: change `headers` (or `url`) in place to send something else. */
export interface InterceptedRequest {
  /** `METHOD /path/{param}` of the route, e.g. `POST /orders/{machineId}/submit`. */
  readonly route: string;
  readonly method: RouteSpec['method'];
  /** The full URL, query included; may be replaced. */
  url: URL;
  /** Lower-cased header names; what is here when the last interceptor returns is sent. */
  headers: Record<string, string>;
  /** The JSON body, `undefined` for GET and create. */
  readonly body: string | undefined;
  /** 0 for the first try; 1 and more for retries (an interceptor's, or of a 423). */
  readonly attempt: number;
}

/** A documented answer as an interceptor sees it, its body parsed. */
export interface InterceptedResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

/**
 * Middleware of a client (`ClientOptions.interceptors`), e.g. a bearer token refreshed on 401:
 *
 * ```ts
 * {
 *   request: (request) => { request.headers['authorization'] = `Bearer ${token}`; },
 *   response: async (response) => {
 *     if (response.status !== 401) return;
 *     token = await refreshToken();
 *     return 'retry';
 *   },
 * }
 * ```
 *
 * `response` runs for every answer with a JSON body (documented or not, before the client
 * throws `UnexpectedResponseError` for an undocumented status); the first `'retry'` sends the
 * request again, through every `request` interceptor, at most once per call.
 */
export interface ClientInterceptor {
  request?(request: InterceptedRequest): void | Promise<void>;
  response?(
    response: InterceptedResponse,
    request: InterceptedRequest,
  ): void | 'retry' | Promise<void | 'retry'>;
}

/** Per-call options of a client method; each one set here wins over the client's. */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  /** Headers of this call, sent after (and over) the client's. */
  headers?: HeadersInit | undefined;
  /** `credentials` of this call. */
  credentials?: Credentials | undefined;
  /** The fetch implementation of this call (e.g. the one a server-side renderer hands you). */
  fetch?: typeof fetch | undefined;
  /** Throw on a documented non-2xx answer (see {@link ClientOptions.throwOnError}). */
  throwOnError?: boolean | undefined;
  /** Retry 423 answers for this call; `false` turns the client's retry off. */
  retryOnLocked?: boolean | RetryOnLocked | undefined;
  /** Retry 429 answers after their Retry-After for this call; `false` turns it off. */
  retryOnLimited?: boolean | RetryOnLimited | undefined;
  /**
   * Sent as the `Idempotency-Key` header (routes registered with `idempotency`): a retry with
   * the same key answers the first response and sends no second event. Use one key per
   * intended action, e.g. `crypto.randomUUID()` kept across retries.
   */
  idempotencyKey?: string | undefined;
  /**
   * Sent as `If-Match` (event routes of an instance): the event is sent only if the instance is
   * still at this version, the `etag` of an earlier answer; else the answer is 412 with the
   * current `etag` in its body, and nothing is written.
   */
  ifMatch?: string | undefined;
  /**
   * Sent as `If-None-Match` (reads): the `etag` of the answer you hold; while the instance is
   * still at that version the answer is 304 with no body (`ok` false, `body` null).
   */
  ifNoneMatch?: string | undefined;
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
  /**
   * The answer's `ETag`: the instance version it shows (reads, events and 412 answers of an
   * instance), for `ifMatch` / `ifNoneMatch` of a later call. Absent when the answer has none.
   */
  etag?: string;
}

/** The 2xx members of a result union: what a method resolves with when it throws on the rest. */
export type SuccessOf<TResult> = Extract<TResult, { ok: true }>;

/** The error thrown for each non-2xx member of a result union, its status and body typed. */
export type ResponseErrorOf<TResult> = TResult extends {
  ok: false;
  status: infer TStatus extends number;
  body: infer TBody;
}
  ? ClientResponseError<TStatus, TBody>
  : never;

type Outcome<TResult, TThrow extends boolean> = TThrow extends true ? SuccessOf<TResult> : TResult;

/**
 * A client method: `(input, options?)`, or `(options?)` for a route that takes no input. It
 * resolves with every documented answer, or with the 2xx ones only when it throws on the
 * others: per call (`{ throwOnError: true }`) or for the client (`TThrow`).
 */
export type RouteMethod<
  TInput extends RouteInput | null,
  TResult,
  TThrow extends boolean = false,
> = [TInput] extends [null]
  ? {
      (options: RequestOptions & { throwOnError: true }): Promise<SuccessOf<TResult>>;
      (options: RequestOptions & { throwOnError: false }): Promise<TResult>;
      (options?: RequestOptions): Promise<Outcome<TResult, TThrow>>;
    }
  : {
      (
        input: TInput,
        options: RequestOptions & { throwOnError: true },
      ): Promise<SuccessOf<TResult>>;
      (input: TInput, options: RequestOptions & { throwOnError: false }): Promise<TResult>;
      (input: TInput, options?: RequestOptions): Promise<Outcome<TResult, TThrow>>;
    };

/** Options of a `subscribe` method (state stream). */
export interface SubscribeOptions<TMessage> {
  /** Called with each committed state, oldest first, and its sequence number. */
  onState(message: TMessage, sequence: number): void;
  signal?: AbortSignal;
  /** Sequence of the last state already seen (resuming): only newer states are sent. */
  lastEventId?: number | string;
  headers?: Record<string, string>;
}

/** A state stream method: resolves when the server ends the stream (a final state) or on abort. */
export type StreamMethod<TInput extends RouteInput, TMessage> = (
  input: TInput,
  options: SubscribeOptions<TMessage>,
) => Promise<void>;

/** A waiting read: the read's input plus the state to wait for and a timeout in ms (max 60000). */
export type WaitMethod<TInput extends RouteInput, TState extends string, TResult> = (
  input: TInput & { state: TState; timeout?: number },
  options?: RequestOptions,
) => Promise<TResult>;

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

/**
 * A documented answer that is not 2xx, thrown when the call throws on errors: `status` and the
 * parsed `body` are typed per route (narrow on `status`: 422 carries field `errors`, 423 the
 * instance's last committed state).
 */
export class ClientResponseError<TStatus extends number = number, TBody = unknown> extends Error {
  readonly status: TStatus;
  readonly body: TBody;

  constructor(route: string, status: TStatus, body: TBody) {
    const message = (body as { message?: unknown } | null)?.message;
    super(`${route} answered ${status}` + (typeof message === 'string' ? `: ${message}` : ''));
    this.name = 'ClientResponseError';
    this.status = status;
    this.body = body;
  }
}

/** The error statuses of HTTP (what an endpoint action may declare besides the runtime's). */
export type HttpErrorStatus =
  | 400
  | 401
  | 402
  | 403
  | 404
  | 405
  | 406
  | 407
  | 408
  | 409
  | 410
  | 411
  | 412
  | 413
  | 414
  | 415
  | 416
  | 417
  | 418
  | 421
  | 422
  | 423
  | 424
  | 425
  | 426
  | 428
  | 429
  | 431
  | 451
  | 500
  | 501
  | 502
  | 503
  | 504
  | 505
  | 506
  | 507
  | 508
  | 510
  | 511;

/** The body of every error answer but 422 and 423: the server's message. */
export interface ErrorBody {
  message: string;
}

/**
 * The body of a 422: the message and the messages of each field (`payload.amount`, ...);
 * without `errors` when no field is at fault (a scenario of another event, a child's contract).
 */
export interface ValidationErrorBody {
  message: string;
  errors?: { [field: string]: string[] };
}

/** The body of a 423: the instance's last committed state, which was processing another event. */
export interface LockedBody {
  data: { id: string; state: string[]; isProcessing: boolean; [key: string]: unknown };
}

/**
 * Any {@link ClientResponseError}, its body typed by its status: what `isResponseError` gives
 * a `catch` clause's `unknown`, so that `error.status === 422` narrows `error.body` to the field
 * errors without a cast.
 */
export type AnyResponseError =
  | ClientResponseError<Exclude<HttpErrorStatus, 422 | 423>, ErrorBody>
  | ClientResponseError<422, ValidationErrorBody>
  | ClientResponseError<423, LockedBody>;

/** The response errors a type declares; any response error, typed by status, when it declares none. */
type ResponseErrorIn<TError> = [Extract<TError, ClientResponseError<number, unknown>>] extends [
  never,
]
  ? Extract<AnyResponseError, TError>
  : Extract<TError, ClientResponseError<number, unknown>>;

/**
 * Whether `error` is a {@link ClientResponseError}. On a `catch` clause's `unknown` it gives
 * {@link AnyResponseError}; on a route's `ResponseErrorOf<...>` (or a union with it) it keeps
 * that route's statuses and bodies (an `instanceof` check on a union holding `Error` would lose
 * them). Either way `error.status === 422` narrows `error.body`.
 */
export function isResponseError<TError>(error: TError): error is ResponseErrorIn<TError> {
  return error instanceof ClientResponseError;
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

interface RetryPolicy {
  retries: number;
  delay: number;
  maxDelay: number;
}

const RETRY_DEFAULTS: RetryPolicy = { retries: 3, delay: 100, maxDelay: 2000 };

function retryPolicy(setting: boolean | RetryOnLocked | undefined): RetryPolicy | null {
  if (setting === undefined || setting === false) return null;
  if (setting === true) return RETRY_DEFAULTS;
  return {
    retries: setting.retries ?? RETRY_DEFAULTS.retries,
    delay: setting.delay ?? RETRY_DEFAULTS.delay,
    maxDelay: setting.maxDelay ?? RETRY_DEFAULTS.maxDelay,
  };
}

/** The Retry-After of a 429, in ms, by answer (kept off the answer object the caller gets). */
const retryAfterOf = new WeakMap<object, number>();

function limitedPolicy(
  setting: boolean | RetryOnLimited | undefined,
): { retries: number; maxWait: number } | null {
  if (setting === undefined || setting === false) return null;
  if (setting === true) return { retries: 3, maxWait: 10_000 };
  return { retries: setting.retries ?? 3, maxWait: setting.maxWait ?? 10_000 };
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A 423 whose snapshot says the instance is still processing: worth another try later. */
function isProcessing(body: unknown): boolean {
  return (body as { data?: { isProcessing?: unknown } } | null)?.data?.isProcessing === true;
}

async function headersOf(init: HeadersInit | undefined): Promise<Record<string, string>> {
  return (typeof init === 'function' ? await init() : init) ?? {};
}

/**
 * Builds the method factory of a client: `method(spec)` returns the function that sends one
 * route's request and resolves with its documented answer. `TThrow` is the type of the
 * client's `throwOnError`.
 */
export function createRouteMethods<TThrow extends boolean = false>(options: ClientOptions) {
  const interceptors = options.interceptors ?? [];

  /**
   * One try: the answer, or `'retry'` when a response interceptor asked for another try and
   * `mayRetry` (once per call: a refreshed token refused again is the answer).
   */
  async function sendOnce(
    spec: RouteSpec,
    input: RouteInput,
    call: RequestOptions,
    attempt: number,
    mayRetry: boolean,
  ): Promise<{ ok: boolean; status: number; body: unknown; etag?: string } | 'retry'> {
    // A relative base URL ('/api') resolves against the page in a browser.
    const page = (globalThis as { location?: { href: string } }).location?.href;
    const url = new URL(options.baseUrl.replace(/\/+$/, '') + fillPath(spec.path, input), page);
    const headers: Record<string, string> = { accept: 'application/json' };
    Object.assign(headers, await headersOf(options.headers));
    const token = await options.auth?.();
    if (token) headers['authorization'] = `Bearer ${token}`;
    Object.assign(headers, await headersOf(call.headers));
    if (call.idempotencyKey !== undefined) headers['idempotency-key'] = call.idempotencyKey;
    if (call.ifMatch !== undefined) headers['if-match'] = call.ifMatch;
    if (call.ifNoneMatch !== undefined) headers['if-none-match'] = call.ifNoneMatch;
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
    const request: InterceptedRequest = {
      route: `${spec.method} ${spec.path}`,
      method: spec.method,
      url,
      headers,
      body,
      attempt,
    };
    for (const interceptor of interceptors) await interceptor.request?.(request);
    // Only the fields that are set: under exactOptionalPropertyTypes (the @tsconfig/strictest
    // settings) RequestInit's optional fields do not accept `undefined`.
    const init: RequestInit = { method: spec.method, headers: request.headers };
    if (body !== undefined) init.body = body;
    if (call.signal !== undefined) init.signal = call.signal;
    const credentials = call.credentials ?? options.credentials;
    if (credentials !== undefined) init.credentials = credentials;
    // Looked up per request, so that a fetch installed after the client was made is used.
    const fetchImpl = call.fetch ?? options.fetch ?? globalThis.fetch;
    const response = await fetchImpl(request.url, init);
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      throw new UnexpectedResponseError(response.status, text);
    }
    const seen: InterceptedResponse = {
      status: response.status,
      headers: response.headers,
      body: parsed,
    };
    // Every interceptor sees the answer (a logger after a token refresher too).
    let retry = false;
    for (const interceptor of interceptors)
      if ((await interceptor.response?.(seen, request)) === 'retry') retry = true;
    if (retry && mayRetry) return 'retry';
    if (!spec.statuses.includes(response.status))
      throw new UnexpectedResponseError(response.status, parsed);
    const etag = response.headers.get('etag');
    const answer = {
      ok: response.status >= 200 && response.status < 300,
      status: response.status,
      body: parsed,
      ...(etag === null ? {} : { etag }),
    };
    // Retry-After in seconds (the HTTP-date form is not sent by machine-routes).
    const retryAfter = response.status === 429 ? response.headers.get('retry-after') : null;
    if (retryAfter !== null && /^[0-9]+$/.test(retryAfter))
      retryAfterOf.set(answer, Number(retryAfter) * 1000);
    return answer;
  }

  async function send(spec: RouteSpec, input: RouteInput, call: RequestOptions = {}) {
    const retry = retryPolicy(call.retryOnLocked ?? options.retryOnLocked);
    const limitedRetry = limitedPolicy(call.retryOnLimited ?? options.retryOnLimited);
    let intercepted = false;
    let locked = 0;
    let limited = 0;
    for (let attempt = 0; ; attempt++) {
      const answer = await sendOnce(spec, input, call, attempt, !intercepted);
      if (answer === 'retry') {
        intercepted = true;
        continue;
      }
      if (
        answer.status === 423 &&
        retry !== null &&
        locked < retry.retries &&
        isProcessing(answer.body)
      ) {
        const ceiling = Math.min(retry.maxDelay, retry.delay * 2 ** locked);
        locked += 1;
        await pause(ceiling / 2 + Math.random() * (ceiling / 2), call.signal);
        continue;
      }
      const wait = retryAfterOf.get(answer);
      if (
        answer.status === 429 &&
        limitedRetry !== null &&
        wait !== undefined &&
        wait <= limitedRetry.maxWait &&
        limited < limitedRetry.retries
      ) {
        limited += 1;
        // Up to a tenth more, so that clients refused together do not come back together.
        await pause(wait + Math.random() * (wait / 10), call.signal);
        continue;
      }
      if (!answer.ok && (call.throwOnError ?? options.throwOnError ?? false))
        throw new ClientResponseError(`${spec.method} ${spec.path}`, answer.status, answer.body);
      return answer;
    }
  }

  /** Follows a state stream (`stream: true`): resolves when the server ends it or on abort. */
  async function follow(
    spec: RouteSpec,
    input: RouteInput,
    subscription: SubscribeOptions<unknown>,
  ): Promise<void> {
    const page = (globalThis as { location?: { href: string } }).location?.href;
    const target = new URL(options.baseUrl.replace(/\/+$/, '') + fillPath(spec.path, input), page);
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    Object.assign(headers, await headersOf(options.headers));
    const token = await options.auth?.();
    if (token) headers['authorization'] = `Bearer ${token}`;
    Object.assign(headers, subscription.headers);
    if (subscription.lastEventId !== undefined)
      headers['last-event-id'] = String(subscription.lastEventId);
    // Request interceptors only: a stream's answer is read event by event, not as one body.
    const request: InterceptedRequest = {
      route: `GET ${spec.path}`,
      method: 'GET',
      url: target,
      headers,
      body: undefined,
      attempt: 0,
    };
    for (const interceptor of interceptors) await interceptor.request?.(request);
    let response: Response;
    try {
      const init: RequestInit = { method: 'GET', headers: request.headers };
      if (subscription.signal !== undefined) init.signal = subscription.signal;
      if (options.credentials !== undefined) init.credentials = options.credentials;
      const fetchImpl = options.fetch ?? globalThis.fetch;
      response = await fetchImpl(request.url, init);
    } catch (error) {
      if (subscription.signal?.aborted) return;
      throw error;
    }
    if (response.status !== 200 || response.body === null) {
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: reported as text
      }
      throw new UnexpectedResponseError(response.status, parsed);
    }
    // Server-sent events: blocks separated by a blank line, `field: value` lines.
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | null = null;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            if (colon <= 0) continue;
            const field = line.slice(0, colon);
            const text = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') id = text;
            else if (field === 'data') data.push(text);
          }
          if (data.length > 0) subscription.onState(JSON.parse(data.join('\n')), Number(id));
        }
      }
    } catch (error) {
      if (subscription.signal?.aborted) return;
      throw error;
    }
  }

  function method<TInput extends RouteInput | null, TResult>(
    spec: RouteSpec,
  ): RouteMethod<TInput, TResult, TThrow> {
    const call = spec.input
      ? (input: RouteInput, options?: RequestOptions) => send(spec, input, options)
      : (options?: RequestOptions) => send(spec, {}, options);
    return call as unknown as RouteMethod<TInput, TResult, TThrow>;
  }

  /** `subscribe(input, { onState, signal?, lastEventId? })` of a state stream route. */
  function stream<TInput extends RouteInput, TMessage>(
    spec: RouteSpec,
  ): StreamMethod<TInput, TMessage> {
    return (input, subscription) => follow(spec, input, subscription as SubscribeOptions<unknown>);
  }

  /**
   * `waitFor({ ...params, state, timeout? }, options?)` of a read route: answers once the
   * instance is in `state` (or final), or after `timeout` ms with the state it is in then.
   */
  function wait<TInput extends RouteInput, TState extends string, TResult>(
    spec: RouteSpec,
  ): WaitMethod<TInput, TState, TResult> {
    return ({ state, timeout, ...params }, options) =>
      send(
        spec,
        {
          ...params,
          payload: timeout === undefined ? { waitFor: state } : { waitFor: state, timeout },
        },
        options,
      ) as Promise<TResult>;
  }

  return Object.assign(method, { stream, wait });
}
