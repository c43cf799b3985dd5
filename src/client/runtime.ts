/**
 * The client runtime: the only code a generated client imports. `generate` emits a copy of
 * this file and of runtime-types.ts beside the client (`client-runtime.gen.ts`,
 * `client-runtime-types.gen.ts`) so frontends need nothing else. This file sends requests,
 * retries and streams; runtime-types.ts holds the types and error classes it re-exports.
 *
 * It must stay free of server code: it imports nothing but runtime-types.ts, and a test walks
 * the import graph of the generated client to keep it that way.
 */
import {
  ClientResponseError,
  UnexpectedResponseError,
  type ClientOptions,
  type HeadersInit,
  type InterceptedRequest,
  type InterceptedResponse,
  type RequestOptions,
  type RetryOnLimited,
  type RetryOnLocked,
  type RouteInput,
  type RouteMethod,
  type RouteSpec,
  type StreamMethod,
  type SubscribeOptions,
  type WaitMethod,
} from './runtime-types.js';

export * from './runtime-types.js';

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
