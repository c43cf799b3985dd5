/**
 * The generated Express app's start-up and shutdown as a library function: `app.gen.ts` binds
 * its parts ({@link GeneratedApp}) and calls {@link buildExpressApp}.
 */
import { createServer, type Server } from 'node:http';
import express, { type Express } from 'express';
import { machineRoutesRouter, withFallback } from '../runtime/http/adapters/express.js';
import { apiReferenceRoutes } from '../runtime/http/api-reference.js';
import { answerClientError } from '../runtime/http/client-errors.js';
import { httpLoggerOf } from '../runtime/http/http-logger.js';
import { ServerDrain } from '../runtime/http/server-drain.js';
import type { Logger } from '../runtime/logger.js';
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

/** Options of {@link buildExpressApp} (the generated `AppOptions`). */
export interface ExpressAppOptions extends AppOptions {
  /**
   * Where the runtime and unexpected route errors are logged (pino-style; default: pino-http's
   * `req.log` if the app has it, else JSON lines on stderr).
   */
  logger?: Logger;
}

/** A built Express app (the generated `App`). */
export type ExpressApp = BuiltApp<Express>;

/**
 * Builds the Express application of every registration of the config: opens the runtime
 * (store, job worker, timer sweep), runs the config's `setup`, mounts the routes, the API
 * reference and the health routes. The app answers its routes and passes every other request
 * on, so it can be mounted on an application of yours (`app.use('/api', built.app)`); `listen`
 * serves it with the config's server limits and the JSON 404 as the last resort. `close()`
 * shuts it down gracefully within `MACHINE_SHUTDOWN_TIMEOUT` (see {@link BuiltApp.close}).
 *
 * @example
 * // app.gen.ts
 * export const buildApp = (options: AppOptions = {}) => buildExpressApp(generated, options);
 */
export async function buildExpressApp(
  parts: GeneratedApp,
  options: ExpressAppOptions = {},
): Promise<ExpressApp> {
  const limits = appLimits(parts, options);
  // Built at start, so a package lacking the page's script fails the start with a named error.
  const reference = parts.docs === undefined ? [] : apiReferenceRoutes(parts.docs);
  const runtime = await openAppRuntime(parts, options, options.logger);
  const router = await buildAppRouter(runtime, parts, options);
  const app = express();
  for (const route of reference) {
    app.get(route.path, (request, response, next) => {
      route
        .read(request.originalUrl)
        .then((body) => response.type(route.contentType).set(route.headers).send(body), next);
    });
  }
  let server: Server | null = null;
  let drain: ServerDrain | null = null;
  let closing: Promise<CloseReport> | null = null;
  const healthRoutes = appHealthRoutes(parts, runtime, () => closing !== null);
  for (const route of healthRoutes) {
    app.get(route.path, (_request, response, next) => {
      route.answer().then((answer) => {
        response
          .status(answer.status)
          .set(answer.headers ?? {})
          .json(answer.body);
      }, next);
    });
  }
  const health = new Set(healthRoutes.map((route) => route.path));
  const logged = options.logger === undefined ? {} : { logger: httpLoggerOf(options.logger) };
  // Routes the application adds to `app` later, before or after these, answer too: the JSON 404
  // is the server's last resort (withFallback), not a handler after these routes.
  app.use(machineRoutesRouter(router, logged));
  const shutdown = (closeOptions: CloseOptions = {}): Promise<CloseReport> =>
    (closing ??= gracefulClose(
      drain ?? new ServerDrain(server ?? createServer()),
      closeOptions.timeoutMs ?? shutdownTimeoutMs(runtime),
      async () => {},
      runtime,
    ));
  return {
    app,
    runtime,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        const { headersTimeout, requestTimeout, connectionsCheckingInterval } = limits;
        const listening = createServer(
          { headersTimeout, requestTimeout, connectionsCheckingInterval },
          withFallback(app, logged),
        );
        server = listening;
        drain = new ServerDrain(listening, (request) => health.has(pathOf(request.url)));
        // Requests Node's parser refuses (not HTTP, headers too large, too slow): { message } JSON.
        listening.on('clientError', answerClientError);
        listening.once('error', reject);
        listening.listen(port, host, () => {
          const address = listening.address();
          resolve(
            `http://${host}:${typeof address === 'object' && address !== null ? address.port : port}`,
          );
        });
      }),
    get closing() {
      return closing !== null;
    },
    shutdown,
    close: (closeOptions) => shutdown(closeOptions).then(() => undefined),
  };
}
