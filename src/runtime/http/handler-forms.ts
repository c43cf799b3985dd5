/**
 * The two extra forms a route handler can carry for the adapters: the answer given without a
 * promise when nothing awaited (`withImmediateAnswer`), and the answer given from the method and
 * headers before the body is read (`withEarlyAnswer`).
 */
import type { EndpointRequest, EndpointResponse, RouteHandler } from './types.js';

/** A route's answer: the response when nothing in the request's handling awaited, else a promise. */
export type ImmediateAnswer = EndpointResponse | Promise<EndpointResponse>;

const IMMEDIATE = Symbol('machine-routes.immediate-answer');

/**
 * A route handler that also carries `answer`, the same handling without the promise a
 * `RouteHandler` wraps around a response known at once. The adapters call that form
 * ({@link immediateAnswerOf}) and send such a response in the same turn: the promise, its
 * `then` and the microtask hop were a measurable share of a stateless request. The handler is
 * `answer` with its result wrapped in a promise, so both answer alike.
 */
export function withImmediateAnswer(
  answer: (request: EndpointRequest) => ImmediateAnswer,
): RouteHandler {
  const handler: RouteHandler = (request) => {
    const response = answer(request);
    return response instanceof Promise ? response : Promise.resolve(response);
  };
  return Object.assign(handler, { [IMMEDIATE]: answer });
}

/** The immediate form of a handler made by {@link withImmediateAnswer}, else the handler. */
export function immediateAnswerOf(
  handler: RouteHandler,
): (request: EndpointRequest) => ImmediateAnswer {
  return (
    (handler as { [IMMEDIATE]?: (request: EndpointRequest) => ImmediateAnswer })[IMMEDIATE] ??
    handler
  );
}

/** Node's request headers as adapters receive them: lower-cased names, repeats as arrays. */
export type RawRequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** An answer a route can give from the request's method and headers alone, or `null` to handle it. */
export type EarlyAnswer = (method: string, headers: RawRequestHeaders) => EndpointResponse | null;

const EARLY = Symbol('machine-routes.early-answer');

/**
 * `handler` carrying `early`, which adapters call before they read the request's body (Fastify's
 * `onRequest`, before Express's body reader): an answer it gives is sent as it is, without the
 * body being read, the route's middleware or its handler. Flow control's refusals of a header
 * key already known refused (flow-control.ts) use it, so that a flooding key costs its server
 * little more than its headers.
 */
export function withEarlyAnswer(handler: RouteHandler, early: EarlyAnswer): RouteHandler {
  return Object.assign(handler, { [EARLY]: early });
}

/** The early answer of a handler made by {@link withEarlyAnswer}, else `undefined`. */
export function earlyAnswerOf(handler: RouteHandler): EarlyAnswer | undefined {
  return (handler as { [EARLY]?: EarlyAnswer })[EARLY];
}
