/**
 * The generated Fastify app's start-up and shutdown as library functions: `app.gen.ts` binds
 * its parts ({@link GeneratedApp}) and calls {@link buildFastifyApp} and
 * {@link fastifyAppPlugin} in a few lines.
 */
import Fastify, {
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyServerOptions,
} from 'fastify';
import type { MachineRuntime } from '../runtime/engine/machine-runtime.js';
import { apiReferenceRoutes } from '../runtime/http/api-reference.js';
import { answerClientError } from '../runtime/http/client-errors.js';
import { encapsulatedPlugin, machineRoutes } from '../runtime/http/adapters/fastify.js';
import { machineRoutesFrameworkErrors } from '../runtime/http/adapters/fastify-framework-errors.js';
import { httpLoggerOf } from '../runtime/http/http-logger.js';
import { ServerDrain } from '../runtime/http/server-drain.js';
import { stderrLogger, type Logger } from '../runtime/logger.js';
import {
  appHealthRoutes,
  appLimits,
  buildAppRouter,
  gracefulClose,
  openAppRuntime,
  pathOf,
  shutdownTimeoutMs,
  type AppOptions,
  type BuiltApp,
  type CloseOptions,
  type CloseReport,
  type GeneratedApp,
} from './app-parts.js';

/** Options of {@link buildFastifyApp} (the generated `AppOptions`). */
export interface FastifyAppOptions extends AppOptions {
  /**
   * Fastify's `logger` option; the runtime and the routes log through it too. Default: none, and
   * the runtime and the routes log unexpected errors as JSON lines on stderr (pino's fields):
   * Fastify's logger is pino, which every start would load. `{ level: 'warn' }` adds Fastify's
   * own warnings and errors (a reply sent twice, a failing hook of yours).
   */
  logger?: FastifyServerOptions['logger'];
}

/** A built Fastify app (the generated `App`). */
export type FastifyApp = BuiltApp<FastifyInstance>;

/** Options of the plugin {@link fastifyAppPlugin} makes (the generated `MachineRoutesOptions`). */
export interface FastifyAppPluginOptions extends Omit<AppOptions, 'env'> {
  /** A runtime opened by the application (then the plugin does not close it). */
  runtime?: MachineRuntime;
  /**
   * Where the runtime the plugin opens and its routes log unexpected errors (pino-style).
   * Default: the app's `app.log`, and each request's `request.log`.
   */
  logger?: Logger;
  /**
   * Answer URLs under the plugin's prefix that no route takes: JSON 404, or 405 with `Allow` for
   * a wrong method on a known path (default false: the application's not-found handler answers
   * them, and each known path gets a 405 route of its own). `buildApp` sets it.
   */
  notFound?: boolean;
  /**
   * When readiness fails for shutdown (config `health`): default, once the Fastify app closes.
   * `buildApp` passes its own drain.
   */
  shuttingDown?: () => boolean;
}

/**
 * Every registration of the config as a Fastify plugin, for an application of your own:
 * `await app.register(machineRoutes, { prefix: '/api' })`. Encapsulated: `prefix` applies, its
 * JSON parser stays inside, your hooks reach its routes; it logs through `app.log` (or
 * `logger`), serves the API reference and the health routes the config enables, and closes the
 * runtime it opened when the app closes.
 */
export function fastifyAppPlugin(parts: GeneratedApp): FastifyPluginAsync<FastifyAppPluginOptions> {
  return encapsulatedPlugin<FastifyAppPluginOptions>(async (app, options) => {
    // Built at start, so a package lacking the page's script fails the start with a named error.
    const reference = parts.docs === undefined ? [] : apiReferenceRoutes(parts.docs);
    const runtime =
      options.runtime ?? (await openAppRuntime(parts, options, options.logger ?? app.log));
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    if (options.runtime === undefined) app.addHook('onClose', () => runtime.close());
    const router = await buildAppRouter(runtime, parts, options);
    for (const route of reference) {
      app.get(route.path, async (request, reply) =>
        reply
          .type(route.contentType)
          .headers(route.headers)
          .send(await route.read(request.url)),
      );
    }
    const shuttingDown = options.shuttingDown ?? (() => closing);
    for (const route of appHealthRoutes(parts, runtime, shuttingDown)) {
      app.get(route.path, async (_request, reply) => {
        const answer = await route.answer();
        return reply
          .code(answer.status)
          .headers(answer.headers ?? {})
          .send(answer.body);
      });
    }
    await app.register(machineRoutes, {
      router,
      notFound: options.notFound ?? false,
      ...(options.logger === undefined ? {} : { logger: httpLoggerOf(options.logger) }),
    });
  }, 'machine-routes-app');
}

/**
 * Builds the Fastify application of every registration of the config: opens the runtime
 * (store, job worker, timer sweep), runs the config's `setup`, mounts the routes, the API
 * reference and the health routes, with the server limits of the config. `close()` shuts it
 * down gracefully within `MACHINE_SHUTDOWN_TIMEOUT` (see {@link BuiltApp.close}).
 *
 * @example
 * // app.gen.ts
 * export const buildApp = (options: AppOptions = {}) => buildFastifyApp(generated, options);
 */
export async function buildFastifyApp(
  parts: GeneratedApp,
  options: FastifyAppOptions = {},
): Promise<FastifyApp> {
  const limits = appLimits(parts, options);
  const { logger: fastifyLogger, env: _env, ...pluginOptions } = options;
  // Fastify sets no request timeout by default: a client trickling its body would hold the
  // connection forever.
  const app = Fastify({
    requestTimeout: limits.requestTimeout,
    http: {
      headersTimeout: limits.headersTimeout,
      connectionsCheckingInterval: limits.connectionsCheckingInterval,
    },
    logger: fastifyLogger ?? false,
    // An id Fastify cannot route (bad percent-encoding, too long) is the documented 404 { message }.
    frameworkErrors: machineRoutesFrameworkErrors,
    // Requests Node's parser refuses (not HTTP, headers too large, too slow): { message } too.
    clientErrorHandler: answerClientError,
    // The drain answers requests arriving while the app shuts down (503 with Retry-After);
    // Fastify's own 503 body ({ error, message, statusCode }) is in no document.
    return503OnClosing: false,
  });
  // Without a Fastify logger (the default), unexpected errors still reach stderr.
  const logger = fastifyLogger === undefined ? { logger: stderrLogger } : {};
  const runtime = await openAppRuntime(parts, options, logger.logger ?? app.log);
  const health = new Set(appHealthRoutes(parts, runtime, () => false).map((route) => route.path));
  const drain = new ServerDrain(app.server, (request) => health.has(pathOf(request.url)));
  try {
    // The plugin answers every URL no route takes (404 { message }, 405 with Allow): 405 routes
    // of their own would cost a router entry per refused method and path at each start.
    await app.register(fastifyAppPlugin(parts), {
      ...pluginOptions,
      runtime,
      ...logger,
      notFound: true,
      shuttingDown: () => drain.draining,
    });
    await app.ready();
  } catch (error) {
    await app.close().catch(() => {});
    await runtime.close();
    throw error;
  }
  let closing: Promise<CloseReport> | null = null;
  const shutdown = (closeOptions: CloseOptions = {}): Promise<CloseReport> =>
    (closing ??= gracefulClose(
      drain,
      closeOptions.timeoutMs ?? shutdownTimeoutMs(runtime),
      () => app.close(),
      runtime,
    ));
  return {
    app,
    runtime,
    listen: (port, host = '127.0.0.1') => app.listen({ port, host }),
    get closing() {
      return closing !== null;
    },
    shutdown,
    close: (closeOptions) => shutdown(closeOptions).then(() => undefined),
  };
}
