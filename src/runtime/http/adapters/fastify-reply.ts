/**
 * The Fastify side of one request: a neutral handler as a Fastify route handler, the neutral
 * request of a Fastify request, and a neutral response (or Fastify's own parsing error) sent
 * on a Fastify reply.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { StateStream } from '../state-stream.js';
import type { EndpointResponse } from '../../definition/endpoint-config.js';
import { errorToResponse } from '../responses.js';
import { immediateAnswerOf } from '../handler-forms.js';
import { httpLoggerOf } from '../http-logger.js';
import { errorResponse, HttpError } from '../response-bodies.js';
import type { EndpointRequest, HttpLogger, RouteHandler } from '../types.js';
import { endpointRequest, rawQuery, trackStream } from './shared.js';

/**
 * Wraps a neutral handler as a Fastify route handler: the building block of generated code
 * that mounts routes one by one (`app.route({ method, url, handler: fastifyHandler(h) })`).
 * Use it inside a scope prepared by `mountFastify` or with equivalent body parsing.
 *
 * Not an async function: it sends the reply, at once when the handler's answer is immediate
 * (`immediateAnswerOf`), else when its promise settles, and returns nothing, so Fastify waits
 * for that send. An async handler returning `reply` cost every request an async frame, the
 * adoption of `reply` as a thenable and Fastify's own `then` on the result. A request that
 * fails before the handler runs (a malformed query string, 400) throws, which Fastify hands to
 * the error handler as it does a rejection.
 */
export function fastifyHandler(
  handler: RouteHandler,
): (request: FastifyRequest, reply: FastifyReply) => void {
  const answer = immediateAnswerOf(handler);
  return (request: FastifyRequest, reply: FastifyReply): void => {
    const response = answer(toEndpointRequest(request));
    if (response instanceof Promise) sendWhenSettled(reply, response);
    else sendResponse(reply, response);
  };
}

/** The key of a route's neutral handler in its Fastify `config`. */
export const LAYER_HANDLER = Symbol('machine-routes handler');

/**
 * Runs a route's handler from the error handler, for a request Fastify refused before routing
 * it to the handler; whatever it answers (or throws) is sent from here, in the layer's JSON.
 */
export function runAfterRefusal(
  handler: RouteHandler,
  request: FastifyRequest,
  reply: FastifyReply,
  log: HttpLogger,
): void {
  const url = request.routeOptions.url;
  const fail = (error: unknown): void => {
    void sendResponse(reply, errorToResponse(error, log, url));
  };
  let endpoint: EndpointRequest;
  try {
    endpoint = toEndpointRequest(request);
  } catch (error) {
    return fail(error);
  }
  handler(endpoint).then((response) => void sendResponse(reply, response), fail);
}

/** Apart from the handler: its closures capturing `reply` would cost every request a context. */
function sendWhenSettled(reply: FastifyReply, response: Promise<EndpointResponse>): void {
  response.then(
    (settled) => sendResponse(reply, settled),
    (error: unknown) => reply.send(error),
  );
}

/** The neutral request of a Fastify request. */
export function toEndpointRequest(request: FastifyRequest): EndpointRequest {
  return endpointRequest(
    request.method.toUpperCase(),
    request.params as Record<string, string>,
    // Parsed here, not by Fastify's querystring parser, for the bracket form (`payload[k]=`).
    rawQuery(request.raw.url),
    request.body,
    request.headers,
    request,
    fastifyLog,
  );
}

/** The framework logger of a request, made on first use (an unexpected error). */
function fastifyLog(request: FastifyRequest): HttpLogger {
  return httpLoggerOf(request.log);
}

export function sendResponse(reply: FastifyReply, response: EndpointResponse): FastifyReply {
  reply.code(response.status);
  if (response.headers) reply.headers(response.headers);
  if (response.body instanceof StateStream) {
    // Written to the response directly (state-stream.ts), with the headers hooks set on the
    // reply (CORS); onSend hooks do not run, as for any hijacked reply. Ended on close by the
    // preClose hook (endStreams).
    reply.hijack();
    const raw = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined)
        raw.setHeader(name, typeof value === 'number' ? String(value) : value);
    }
    raw.writeHead(response.status);
    response.body.attach(raw);
    return reply;
  }
  if (response.body instanceof Readable) followStream(reply, response.body);
  return reply.send(response.body);
}
/**
 * A stream body (server-sent events) that ends early, because the client left or the app
 * closes, takes its connection with it: the response can never complete, and a connection
 * left open would keep `app.close()` waiting.
 */
function followStream(reply: FastifyReply, body: Readable): void {
  trackStream(reply.server.server, body);
  const raw = reply.raw;
  body.once('close', () => {
    if (!raw.writableEnded) raw.destroy();
  });
}

/** Maps Fastify's request-parsing errors to the layer's bodies; anything else is a 500. */
export function fastifyErrorResponse(
  error: FastifyError,
  logger: HttpLogger,
  route: string | undefined,
): EndpointResponse {
  if (error instanceof HttpError) return errorToResponse(error, logger, route);
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errorResponse(413, 'Request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errorResponse(415, 'Unsupported Media Type: send application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errorResponse(400, 'Malformed request body.');
    default:
      if (
        typeof error.statusCode === 'number' &&
        error.statusCode >= 400 &&
        error.statusCode < 500
      ) {
        return errorResponse(error.statusCode, error.message);
      }
      return errorToResponse(error, logger, route);
  }
}
