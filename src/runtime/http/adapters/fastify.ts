/**
 * Fastify adapter: a router's planned routes as an encapsulated Fastify plugin
 * ({@link machineRoutes}), so that its JSON parser and error handler touch only these routes.
 * The request and reply side of each route is fastify-reply.ts.
 */
import type {
  FastifyError,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyPluginOptions,
  FastifyReply,
  FastifyRequest,
} from 'fastify';
import type { EndpointResponse } from '../../definition/endpoint-config.js';
import { earlyAnswerOf } from '../handler-forms.js';
import { httpLoggerOf } from '../http-logger.js';
import { errorResponse, HttpError } from '../response-bodies.js';
import {
  parseJsonBody,
  UnreadableBody,
  unsupportedEncoding,
  unsupportedMediaType,
} from '../request-parsing.js';
import type { HttpLogger, RouteHandler } from '../types.js';
import { toColonPath } from '../../definition/uri.js';
import { maxParamLength, MethodTable, routesLikeTable } from './method-not-allowed.js';
import {
  allowHeader,
  keepRawBody,
  endStreams,
  silentConnections,
  methodsByPath,
  sourceRoutes,
  type MountOptions,
  type MountSource,
} from './shared.js';
import {
  fastifyErrorResponse,
  fastifyHandler,
  LAYER_HANDLER,
  runAfterRefusal,
  sendResponse,
} from './fastify-reply.js';

export { fastifyHandler, toEndpointRequest } from './fastify-reply.js';

/** Options of {@link mountFastify}. */
export interface FastifyMountOptions extends MountOptions {
  /**
   * Where unexpected errors are logged. Default: the framework's logger of each request
   * (`request.log`, pino), so they land where the application's own logs go.
   */
  logger?: HttpLogger;
}

/** Options of the {@link machineRoutes} plugin (`app.register(machineRoutes, { router, prefix })`). */
export interface MachineRoutesPluginOptions extends FastifyPluginOptions {
  /** The routes: a `MachineRouter` (or routes plus a body limit). */
  router: MountSource;
  /** Prefix of every route (Fastify's own register option). */
  prefix?: string;
  /**
   * Answer unknown URLs under `prefix` with the layer's JSON 404 (default: true with a prefix,
   * false without one, so the application's own not-found handling stays in charge). A wrong
   * method on a known path is then answered there too (405 with `Allow`), with no route of its
   * own: a faster start. Without it the plugin registers a 405 route per path.
   */
  notFound?: boolean;
  /** See {@link FastifyMountOptions.logger}. */
  logger?: HttpLogger;
}

/**
 * The routes of a router as a Fastify plugin. Encapsulated, with a name and Fastify's version
 * check (as fastify-plugin with `encapsulate: true` makes one): its JSON parser, error handler
 * and not-found handler apply to its own routes only, `prefix` works as for any plugin, and the
 * application's hooks and decorators still reach its routes. Errors are logged through
 * `request.log`, i.e. the application's pino logger.
 *
 * @example
 * const app = Fastify({ logger: true });
 * await app.register(machineRoutes, { router, prefix: '/api' });
 * app.get('/health', async () => ({ ok: true })); // before or after: both answer
 * await app.listen({ port: 3000 });
 */
export const machineRoutes = pluginMeta<FastifyPluginAsync<MachineRoutesPluginOptions>>(
  async (scope, options) => {
    const notFound = options.notFound ?? (options.prefix !== undefined && options.prefix !== '');
    const refusals = notFound ? methodTableOf(scope, options.router) : undefined;
    const notFoundAnswer = notFound
      ? (request: FastifyRequest): EndpointResponse => {
          const allow = refusals?.().refusal(request.method, request.url);
          return allow === undefined
            ? errorResponse(404, 'Not Found.')
            : errorResponse(405, 'Method Not Allowed.', { headers: { allow } });
        }
      : undefined;
    registerRoutes(scope, options.router, options.logger, refusals === undefined, notFoundAnswer);
    if (notFoundAnswer !== undefined) {
      scope.setNotFoundHandler((request, reply) => sendResponse(reply, notFoundAnswer(request)));
    }
  },
  'machine-routes',
);

/**
 * Makes an application's own plugin the way {@link machineRoutes} is made: encapsulated (so
 * `prefix` applies and its parsers stay inside), named, and checked against Fastify 5. Generated
 * `app.gen.ts` builds its `machineRoutes` plugin (runtime, router, API reference) with it, so the
 * user's project needs no fastify-plugin of its own.
 */
export function encapsulatedPlugin<Options extends FastifyPluginOptions>(
  plugin: FastifyPluginAsync<Options>,
  name: string,
): FastifyPluginAsync<Options> {
  return pluginMeta(plugin, name);
}

/**
 * Marks `plugin` as fastify-plugin does with `{ name, fastify: '5.x', encapsulate: true }`: the
 * three symbols Fastify reads (a scope of its own, its name in errors and `printPlugins`, and
 * the version range Fastify checks at `register`), without the package.
 */
function pluginMeta<Plugin extends object>(plugin: Plugin, name: string): Plugin {
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: false,
    [Symbol.for('fastify.display-name')]: name,
    [Symbol.for('plugin-meta')]: { name, fastify: '5.x', encapsulate: true },
  });
}

const withNotFound = new WeakSet<FastifyInstance>();

/**
 * Mounts every route of `source` on `app`. Await it (or `app.ready()`) before listening.
 * `app.register(machineRoutes, { router, prefix })` is the same as a plugin; this form also
 * sets the layer's JSON 404 for the whole application (`notFound`, default true).
 *
 * Bodies are parsed by the layer's own JSON parser (400 malformed, 413 over the limit, 415
 * other content types, `__proto__` keys dropped; the 400 and 415 come after the route's
 * middleware) and every error body is the layer's JSON.
 *
 * @example
 * const app = Fastify();
 * await mountFastify(app, router);
 * await app.listen({ port: 3000 });
 */
export async function mountFastify(
  app: FastifyInstance,
  source: MountSource,
  options: FastifyMountOptions = {},
): Promise<void> {
  await app.register(machineRoutes, {
    router: source,
    notFound: false,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  if (options.notFound !== false && !withNotFound.has(app)) {
    // Fastify accepts one not-found handler per instance: set it on the first mount only.
    withNotFound.add(app);
    app.setNotFoundHandler((_request, reply) =>
      sendResponse(reply, errorResponse(404, 'Not Found.')),
    );
  }
}

/**
 * The 405 answers of `scope`'s not-found handler, built on its first call (the first URL no
 * route takes, not at each start), or `undefined` when they must be routes (an instance whose
 * router folds URLs, {@link routesLikeTable}).
 */
function methodTableOf(
  scope: FastifyInstance,
  source: MountSource,
): (() => MethodTable) | undefined {
  if (!routesLikeTable(scope)) return undefined;
  // The routes as registered now: a router mounted later gets no Fastify route either.
  const routes = [...sourceRoutes(source).routes];
  const prefix = scope.prefix;
  const limit = maxParamLength(scope);
  let table: MethodTable | undefined;
  return () => (table ??= new MethodTable(prefix, routes, limit));
}

/**
 * The routes, their body parsers and error handler, in the (encapsulated) `scope`, and the 405
 * routes unless the scope's not-found handler answers them (`methodRoutes` false).
 */
function registerRoutes(
  scope: FastifyInstance,
  source: MountSource,
  logger: HttpLogger | undefined,
  methodRoutes: boolean,
  notFoundAnswer?: (request: FastifyRequest) => EndpointResponse,
): void {
  const { routes, bodyLimit } = sourceRoutes(source);
  if (!closingStreams.has(scope.server)) {
    // Open state streams end when the app closes: else close() would wait for their clients.
    closingStreams.add(scope.server);
    const server = scope.server;
    const silent = silentConnections(server);
    scope.addHook('preClose', async () => {
      endStreams(server);
      silent.destroy();
    });
  }
  // Encapsulated: these parsers and this error handler apply to the routes below only.
  // A body they cannot read is handed on as an UnreadableBody rather than refused here: route
  // middleware runs first, and the 400/415 is thrown where the body is read. Only a body over
  // `bodyLimit` (413) is refused before any route runs (Fastify stops reading it).
  scope.removeAllContentTypeParsers();
  // Read as bytes: a webhook checks its signature over the body as sent (keepRawBody).
  const parseJson = (
    request: FastifyRequest,
    body: Buffer,
    done: (error: Error | null, body?: unknown) => void,
  ) => {
    const encoded = unsupportedEncoding(request.headers['content-encoding']);
    if (encoded !== undefined) return done(null, new UnreadableBody(encoded));
    keepRawBody(request, body);
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body.toString('utf8'));
    } catch (error) {
      return done(null, new UnreadableBody(error as HttpError));
    }
    done(null, parsed);
  };
  scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, parseJson);
  scope.addContentTypeParser(
    /^application\/[^;]+\+json$/,
    { parseAs: 'buffer', bodyLimit },
    parseJson,
  );
  // Any other media type (and a body without one): received within the limit, then refused
  // where it is read. Fastify would answer 415 before the route's middleware.
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, _body, done) =>
    done(null, new UnreadableBody(unsupportedMediaType())),
  );
  scope.setErrorHandler((error: FastifyError, request, reply) => {
    const log = logger ?? httpLoggerOf(request.log);
    const handler =
      error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? (request.routeOptions.config as { [LAYER_HANDLER]?: RouteHandler })[LAYER_HANDLER]
        : undefined;
    if (handler !== undefined) {
      // A Content-Type header Fastify cannot parse (`json`, an empty one): the route still
      // runs its middleware first, and reading the body answers the 415.
      request.body = new UnreadableBody(unsupportedMediaType());
      runAfterRefusal(handler, request, reply, log);
      return;
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' && request.is404 && notFoundAnswer) {
      // The same on a URL no route takes: its 404 (405) whatever the body.
      void sendResponse(reply, notFoundAnswer(request));
      return;
    }
    void sendResponse(reply, fastifyErrorResponse(error, log, request.routeOptions.url));
  });
  for (const { route, handler } of routes) {
    const early = earlyAnswerOf(handler);
    scope.route({
      method: route.method,
      url: toColonPath(route.path),
      bodyLimit,
      // Fastify binds `handler`: the error handler finds the layer's own in the route's config.
      config: { [LAYER_HANDLER]: handler },
      handler: fastifyHandler(handler),
      // Before the body is read: an answer here skips its parsing (Node discards the body).
      ...(early === undefined
        ? {}
        : {
            onRequest: (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
              const response = early(request.method, request.headers);
              if (response === null) done();
              else void sendResponse(reply, response);
            },
          }),
    });
  }
  if (!methodRoutes) return;
  // 405 with Allow for the other methods of a known path (Fastify answers 404 otherwise).
  for (const { path, allowed, refused } of methodsByPath(routes)) {
    if (refused.length === 0) continue;
    const allow = allowHeader(allowed);
    const refuse: RouteHandler = async () =>
      errorResponse(405, 'Method Not Allowed.', { headers: { allow } });
    scope.route({
      method: refused,
      url: toColonPath(path),
      // Found by the error handler too: a wrong method is 405 whatever its Content-Type.
      config: { [LAYER_HANDLER]: refuse },
      handler: fastifyHandler(refuse),
    });
  }
}

/** HTTP servers whose streams end on close (an app and its plugin scopes share one). */
const closingStreams = new WeakSet<object>();
