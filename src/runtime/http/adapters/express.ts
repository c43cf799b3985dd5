/**
 * Express adapter: mounts a router's planned routes on an application through one
 * `express.Router`, with the same body rules as the Fastify adapter (the layer's own JSON
 * parser, 400/413/415, `__proto__` keys dropped) and the layer's JSON error bodies.
 */
import { Readable, pipeline } from 'node:stream';
import express, {
  type Express,
  type NextFunction,
  type RequestHandler,
  type Request,
  type Response,
  type Router,
} from 'express';
import type { EndpointResponse } from '../../definition/endpoint-config.js';
import { errorToResponse } from '../responses.js';
import { earlyAnswerOf } from '../handler-forms.js';
import { defaultHttpLogger, httpLoggerOf } from '../http-logger.js';
import { errorResponse, HttpError } from '../response-bodies.js';
import type { Logger } from '../../logger.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from 'node:net';
import type { EndpointRequest, HttpLogger, RouteHandler } from '../types.js';
import { StateStream } from '../state-stream.js';
import { readJsonBody } from './express-body.js';
import { toColonPath } from '../../definition/uri.js';
import {
  allowHeader,
  MALFORMED_URL_MESSAGE,
  methodsByPath,
  endpointRequest,
  rawQuery,
  sourceRoutes,
  endStreamsOnClose,
  trackStream,
  type MountOptions,
  type MountSource,
} from './shared.js';

/** Options of {@link mountExpress} and {@link machineRoutesRouter}. */
export interface ExpressMountOptions extends MountOptions {
  /**
   * Where unexpected errors are logged. Default: the request's `req.log` when the application
   * uses pino-http (Express has no logger of its own), else JSON lines on stderr.
   */
  logger?: HttpLogger;
}

/**
 * A route answers its path as the OpenAPI document spells it, as Fastify does: Express's
 * routers fold case and a trailing slash by default (`POST /Orders/create/` created an order).
 */
const EXACT_PATHS = { caseSensitive: true, strict: true } as const;

/**
 * The routes of a router as one `express.Router`, to `app.use()` where the application wants
 * them (`app.use('/api', machineRoutesRouter(router))`). It answers its own routes (and 405 for
 * their other methods) and nothing else: other URLs go on to whatever the application added
 * before or after it. For the layer's JSON 404 on the URLs nobody answers, end the application
 * with {@link notFoundHandler} or serve it through {@link withFallback}.
 *
 * @example
 * const app = express();
 * app.use(machineRoutesRouter(router));
 * app.get('/health', (_req, res) => res.json({ ok: true })); // after: still answers
 * createServer(withFallback(app)).listen(3000);
 */
export function machineRoutesRouter(
  source: MountSource,
  options: Omit<ExpressMountOptions, 'notFound'> = {},
): Router {
  const router = express.Router(EXACT_PATHS);
  addRoutes(router, source, options);
  return router;
}

/**
 * Where a request one of our routes took records the error handler that answers its errors: a
 * symbol-keyed property rather than a WeakSet entry, which costs a hash insert per request and
 * an ephemeron for the garbage collector to trace.
 */
const CLAIMED = Symbol('machine-routes claimed');
type Claimable = Request & { [CLAIMED]?: object };

/**
 * Adds the routes of `source`, the 405 routes of their paths and the error handler answering
 * their errors to `router`. Each route is one layer (claim, body, handler in one function):
 * every layer is a dispatch of Express's router, a visible share of a request's cost.
 */
function addRoutes(
  router: Router,
  source: MountSource,
  options: Omit<ExpressMountOptions, 'notFound'>,
): void {
  const { routes, bodyLimit } = sourceRoutes(source);
  // Requests one of these routes took carry this token: only their errors are answered here.
  const token = {};
  for (const { route, handler } of routes) {
    const method = route.method.toLowerCase() as
      'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';
    router[method](toColonPath(route.path), routeHandler(handler, bodyLimit, token));
  }
  for (const { path, allowed, refused } of methodsByPath(routes)) {
    const allow = allowHeader(allowed);
    // HEAD of a path without GET is refused too; methods no route plans (TRACE, ...) are 404
    // as on Fastify. OPTIONS has a route on every path of a router (router.optionsRoutes).
    const refusedMethods = new Set<string>(
      allowed.includes('GET') ? refused : [...refused, 'HEAD'],
    );
    router.all(toColonPath(path), (request, response) => {
      sendResponse(
        response,
        refusedMethods.has(request.method)
          ? errorResponse(405, 'Method Not Allowed.', { headers: { allow } })
          : errorResponse(404, 'Not Found.'),
      );
    });
  }
  router.use((error: unknown, request: Request, response: Response, next: NextFunction) => {
    // Errors of the application's own handlers are the application's: only ours are answered.
    // A path parameter that cannot be decoded fails while Express matches routes, before any
    // handler of ours runs: a client error (400), answered in the layer's JSON too.
    const status = (error as { status?: unknown } | null)?.status;
    const matching = error instanceof URIError && status === 400;
    if (response.headersSent || !((request as Claimable)[CLAIMED] === token || matching))
      return next(error);
    const logger = options.logger ?? requestLogger(request) ?? defaultHttpLogger;
    sendResponse(response, expressErrorResponse(error, logger, request.route?.path));
  });
}

/** One route's layer: claims the request, reads its JSON body, runs the neutral handler. */
function routeHandler(handler: RouteHandler, limit: number, token: object): RequestHandler {
  const early = earlyAnswerOf(handler);
  return (request, response, next) => {
    (request as Claimable)[CLAIMED] = token;
    if (early !== undefined) {
      // Before the body is read: an answer here skips it (Node discards it).
      const answer = early(request.method, request.headers);
      if (answer !== null) return void sendResponse(response, answer);
    }
    readJsonBody(request, limit, (error) => {
      if (error !== undefined) return next(error);
      // After a body this runs in the stream's 'end' event, outside Express's try/catch: a
      // malformed query string (a 400 HttpError) must still reach the error handler.
      let endpoint: EndpointRequest;
      try {
        endpoint = toEndpointRequest(request);
      } catch (failure) {
        return next(failure);
      }
      handler(endpoint).then((result) => sendResponse(response, result), next);
    });
  };
}

/** The layer's JSON 404, as the last handler of an application. */
export function notFoundHandler(): RequestHandler {
  return (_request, response) => sendResponse(response, errorResponse(404, 'Not Found.'));
}

/**
 * The application as a `node:http` request listener whose last resort is the layer's JSON
 * answer: 404 for URLs no route answers, 500 (logged) for an error no handler took. Unlike an
 * `app.use(notFoundHandler())` at build time, routes the application adds later still answer.
 */
export function withFallback(
  app: Express,
  options: { logger?: HttpLogger } = {},
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    const handle = app as unknown as (
      request: IncomingMessage,
      response: ServerResponse,
      done: (error?: unknown) => void,
    ) => void;
    handle(request, response, (error?: unknown) => {
      const res = response as Response;
      if (res.headersSent) {
        response.end();
        return;
      }
      const logger = options.logger ?? requestLogger(request as Request) ?? defaultHttpLogger;
      sendResponse(
        res,
        error === undefined || error === null
          ? errorResponse(404, 'Not Found.')
          : expressErrorResponse(error, logger, undefined),
      );
    });
  };
}

/** pino-http's `req.log`, when the application installed it. */
function requestLogger(request: Request): HttpLogger | undefined {
  const log = (request as { log?: unknown }).log;
  return typeof log === 'object' && log !== null && typeof (log as Logger).error === 'function'
    ? httpLoggerOf(log as Logger)
    : undefined;
}

const parents = new WeakMap<Express | Router, Router>();

/**
 * Mounts every route of `source` on `app`. May be called once per registration: every call's
 * routes go into one `express.Router` per app, mounted on the first call and, with `notFound`
 * (default, read on the first call), followed by a JSON 404, so routes the application adds
 * after the first call are shadowed: prefer `app.use(machineRoutesRouter(router))` with
 * {@link withFallback}, which composes in any order. Returns that router (shared by the calls).
 */
export function mountExpress(
  app: Express | Router,
  source: MountSource,
  options: ExpressMountOptions = {},
): Router {
  // One parent router per app, mounted once and followed by the 404: routes of later calls go
  // into it, so they still come before the 404 (Express matches in registration order). They
  // go into it directly, not in a router of their own: each nested router costs a request a
  // dispatch (about a tenth of a stateless route's CPU time, bench/http/cpu.ts express).
  let parent = parents.get(app);
  if (parent === undefined) {
    parent = express.Router(EXACT_PATHS);
    parents.set(app, parent);
    app.use(parent);
    if (options.notFound !== false) app.use(notFoundHandler());
  }
  addRoutes(parent, source, options.logger === undefined ? {} : { logger: options.logger });
  return parent;
}

/**
 * Wraps a neutral handler as an Express handler (expects `request.body` parsed as by
 * `jsonBody` (express-body.ts)). The building block of generated per-route Express code.
 */
export function expressHandler(handler: RouteHandler): RequestHandler {
  return (request: Request, response: Response, next: NextFunction): void => {
    handler(toEndpointRequest(request)).then((result) => sendResponse(response, result), next);
  };
}

/** The neutral request of an Express request. */
export function toEndpointRequest(request: Request): EndpointRequest {
  return endpointRequest(
    request.method.toUpperCase(),
    request.params as Record<string, string>,
    rawQuery(request.originalUrl),
    (request as { body?: unknown }).body,
    request.headers,
    request,
    requestLogger,
  );
}

/**
 * The layer's answer to an error reaching the router: Express's own request errors carry a 4xx
 * `status` and are the client's, answered like the Fastify adapter does (a path parameter with
 * malformed percent-encoding, a URIError with status 400, is 404 like the generated Fastify
 * app's `frameworkErrors`); anything else goes through
 * `errorToResponse` (500 unless it is one of ours).
 */
function expressErrorResponse(
  error: unknown,
  logger: HttpLogger,
  route: string | undefined,
): EndpointResponse {
  const status = (error as { status?: unknown } | null)?.status;
  if (
    !(error instanceof HttpError) &&
    typeof status === 'number' &&
    status >= 400 &&
    status < 500
  ) {
    // A path parameter Express cannot decode names no machine: the documented 404.
    if (error instanceof URIError) return errorResponse(404, MALFORMED_URL_MESSAGE);
    return errorResponse(status, status === 400 ? 'Malformed request.' : 'Request refused.');
  }
  return errorToResponse(error, logger, route);
}

function sendResponse(response: Response, result: EndpointResponse): void {
  response.status(result.status);
  if (result.headers) response.set(result.headers);
  const body = result.body;
  if (body instanceof StateStream) {
    // Written to the response directly (state-stream.ts); ended on close like any stream.
    response.flushHeaders();
    const server = (response.req.socket as { server?: object } | null)?.server;
    if (server instanceof Server) endStreamsOnClose(server);
    body.attach(response);
    return;
  }
  if (body instanceof Readable) {
    // A stream (server-sent events): written as it comes, destroyed when the client leaves.
    response.flushHeaders();
    // Ended when the server shuts down (ServerDrain), like the Fastify adapter's.
    const server = (response.req.socket as { server?: object } | null)?.server;
    trackStream(server, body);
    // An HTTPS server is one as well (both are net.Server).
    if (server instanceof Server) endStreamsOnClose(server);
    pipeline(body, response, () => {});
    return;
  }
  if (writesDirectly(response, result.status, body)) {
    // What `response.json` sends (Node adds the Content-Length of a body given to `end`), less
    // Express's ETag, a hash of every body: the layer tags what names a version itself (reads
    // and event answers of an instance, docs/http.md "Conditional requests") and answers their
    // If-None-Match; a hash on an answer while the instance is processing, or on a command's
    // answer, would promise a version that is none. Node writes no body for HEAD.
    response.setHeader('content-type', 'application/json; charset=utf-8');
    response.end(JSON.stringify(body));
    return;
  }
  response.json(body);
}

/**
 * Whether an answer can skip `response.json`: a JSON object with a status that has a body, in an
 * application that sets none of Express's JSON options (`json replacer`, `json spaces`,
 * `json escape`, which `response.json` applies) and on a response whose content headers are
 * still unset.
 */
function writesDirectly(response: Response, status: number, body: unknown): boolean {
  if (typeof body !== 'object' || body === null || ArrayBuffer.isView(body)) return false;
  if (status === 204 || status === 205 || status === 304) return false;
  const settings = (response.app as { settings?: Record<string, unknown> }).settings;
  if (
    settings === undefined ||
    settings['json replacer'] !== undefined ||
    settings['json spaces'] !== undefined ||
    settings['json escape']
  )
    return false;
  return (
    !response.hasHeader('content-type') &&
    !response.hasHeader('etag') &&
    !response.hasHeader('transfer-encoding')
  );
}
