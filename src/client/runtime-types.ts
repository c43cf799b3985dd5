/**
 * The client runtime's contract: the options of a client, the shapes of a route and its
 * answers, and the error classes a call rejects with. `generate` emits a copy beside the
 * client (`client-runtime-types.gen.ts`), which `client-runtime.gen.ts` re-exports.
 *
 * Like runtime.ts it imports nothing at all (see there why).
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
