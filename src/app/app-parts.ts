/**
 * What the generated apps of both frameworks share: the parts `app.gen.ts` binds (its config,
 * the config's machines, the mount of its route tables, the API reference's loaders), the
 * runtime they open, the router they mount, the health routes and the graceful close. The
 * framework files (fastify-app.ts, express-app.ts) put these on Fastify and Express.
 *
 * Above the runtime's layers: it reads the config (`machine-routes/config` types, the models'
 * binders), which the runtime never imports.
 */
import type { MachineRoutesConfig } from '../generator/config.js';
import { resolveModelBinders } from '../generator/models.js';
import type { Clock } from '../runtime/clock.js';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import { MachineRuntime } from '../runtime/engine/machine-runtime.js';
import {
  ENVIRONMENT_SETTINGS,
  layeredEnvironment,
  type Environment,
} from '../runtime/environment.js';
import type { ApiReferenceOptions } from '../runtime/http/api-reference.js';
import { mountAdminRoutes } from '../runtime/http/admin/admin-routes.js';
import { healthRoutes, type HealthRoute } from '../runtime/http/health.js';
import { MachineRouter } from '../runtime/http/machine-router.js';
import type { MiddlewareRegistry } from '../runtime/http/middleware-registry.js';
import { httpLoggerOf } from '../runtime/http/http-logger.js';
import { resolveServerOptions, type ServerOptions } from '../runtime/http/server-options.js';
import type { ServerDrain } from '../runtime/http/server-drain.js';
import type { Logger } from '../runtime/logger.js';
import { resolveStoreUrlSync } from '../runtime/store-url.js';

/** The parts of the config the app runs with (the rest is the generator's). */
export type AppConfig = Pick<
  MachineRoutesConfig,
  'store' | 'server' | 'timers' | 'middleware' | 'models' | 'setup' | 'health' | 'admin'
> &
  /** The registrations: the routes only pinned older versions have are mounted from them. */
  Partial<Pick<MachineRoutesConfig, 'registrations'>>;

/**
 * What a generated `app.gen.ts` binds once: its config and what `generate` derived from it.
 * The app library takes it so that the generated file holds no start-up logic of its own.
 */
export interface GeneratedApp {
  /** The config module's default export. */
  config: AppConfig;
  /** Every machine the config registers (`configMachines()` of machines.gen.ts). */
  machines: () => readonly MachineDefinition[];
  /** Mounts every generated route table on `router` (`router.mount(machineOf('order'), orderRoutes)`). */
  mount: (router: MachineRouter) => void;
  /** The served API reference (config `docs`): the document's and diagrams' loaders, title, prefix. */
  docs?: ApiReferenceOptions;
  /** The state diagrams' SVGs for the admin console (config `admin`), loaded on first request. */
  adminDiagrams?: () => Promise<Readonly<Record<string, string>>>;
}

/** Options of a generated `buildApp`, on either framework (each adds its `logger`). */
export interface AppOptions {
  /** Store URL; default: the config's `store`, else `MACHINE_DATABASE_URL`, else the embedded SQLite file. */
  databaseUrl?: string;
  /** Middleware implementations; default: the config's `middleware` registry. */
  middleware?: MiddlewareRegistry;
  /**
   * Run the job queue's worker (child machines, completions, timeouts, async sends) and the
   * timer sweep of the config's `timers` in this process (default true). False when
   * `machine-routes worker` processes run them.
   */
  worker?: boolean;
  /** Server limits (timeouts, body and payload sizes); each overrides the config's `server`. */
  server?: ServerOptions;
  /** Time source of the runtime (default: the system clock); tests pass a `ManualClock`. */
  clock?: Clock;
  /**
   * Seconds `close()` waits for requests in flight and running jobs before cutting them
   * (default: `MACHINE_SHUTDOWN_TIMEOUT`, 10).
   */
  shutdownTimeout?: number;
  /** Environment the settings are read from (default `process.env`). */
  env?: Environment;
}

/** Options of a graceful close. */
export interface CloseOptions {
  /** Milliseconds requests in flight and running jobs may take (default: the app's `shutdownTimeout`). */
  timeoutMs?: number;
}

/** What a graceful close did. */
export interface CloseReport {
  /** Requests still in flight at the deadline, cut unanswered (0: all finished). */
  cutRequests: number;
  /** Milliseconds from the start of the close to the store closed. */
  elapsedMs: number;
}

/** A built application and what it holds open. */
export interface BuiltApp<TApp> {
  app: TApp;
  runtime: MachineRuntime;
  /** Listens on `port` (0: any free port) and resolves with the base URL. */
  listen(port: number, host?: string): Promise<string>;
  /**
   * Shuts down gracefully (docs/operating.md "Shutdown"): stops accepting connections, answers
   * requests on open connections 503 with `Retry-After`, lets requests in flight finish, then
   * stops the timer sweep and the job worker (running jobs finish) and closes the store, all
   * within `timeoutMs`. Readiness fails from the first moment. Idempotent: a second call
   * returns the first one's report.
   */
  shutdown(options?: CloseOptions): Promise<CloseReport>;
  /** {@link shutdown}, resolving with nothing. */
  close(options?: CloseOptions): Promise<void>;
  /** True once `shutdown` (or `close`) was called. */
  readonly closing: boolean;
}

/** The config's middleware registry (a name list means the app is handed the implementations). */
function configMiddleware(config: AppConfig): MiddlewareRegistry {
  const middleware = config.middleware;
  return middleware === undefined || Array.isArray(middleware)
    ? {}
    : (middleware as MiddlewareRegistry);
}

/** The server limits of the config and the options, defaults filled in. */
export function appLimits(
  parts: GeneratedApp,
  options: AppOptions,
): ReturnType<typeof resolveServerOptions> {
  return resolveServerOptions({ ...parts.config.server, ...options.server });
}

/** The shutdown bound in ms the runtime was opened with (`shutdownTimeout`, `MACHINE_SHUTDOWN_TIMEOUT`). */
export function shutdownTimeoutMs(runtime: MachineRuntime): number {
  return (runtime.settings?.runtime.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT) * 1000;
}

/** `MACHINE_SHUTDOWN_TIMEOUT`'s default, in seconds. */
const DEFAULT_SHUTDOWN_TIMEOUT = ENVIRONMENT_SETTINGS.shutdownTimeout.default;

/** Opens the runtime of the config's machines (its store, queue, worker, timers), logging through `logger`. */
export function openAppRuntime(
  parts: GeneratedApp,
  options: AppOptions,
  logger: Logger | undefined,
): Promise<MachineRuntime> {
  // One order for every way in (docs/persistence.md): the option, MACHINE_DATABASE_URL (of
  // `env` over process.env), the config's `store`, the default file.
  const databaseUrl = resolveStoreUrlSync({
    flag: options.databaseUrl,
    flagName: 'databaseUrl',
    env: layeredEnvironment(options.env),
    config: parts.config.store,
  }).url;
  // The store's durable job queue (embedded on SQLite, pg-boss on PostgreSQL) runs the child
  // machines; its jobs commit with the steps that cause them.
  return MachineRuntime.open({
    databaseUrl,
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.shutdownTimeout === undefined ? {} : { shutdownTimeout: options.shutdownTimeout }),
    machines: parts.machines(),
    timers: parts.config.timers ?? [],
    worker: options.worker ?? true,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(logger === undefined ? {} : { logger }),
  });
}

/**
 * The router of every registration of the config, once the config's `setup` has run; when
 * `setup` or a mount fails, the runtime is closed (no worker left running, no file handle left
 * open) and the error thrown.
 */
export async function buildAppRouter(
  runtime: MachineRuntime,
  parts: GeneratedApp,
  options: AppOptions & { logger?: Logger },
): Promise<MachineRouter> {
  try {
    const { config } = parts;
    await config.setup?.(runtime.store);
    const limits = appLimits(parts, options);
    const router = new MachineRouter({
      runtime,
      middleware: options.middleware ?? configMiddleware(config),
      models: resolveModelBinders(config.models, runtime.store),
      // Unset: each request's framework logger (Fastify's request.log, pino-http's req.log).
      ...(options.logger === undefined ? {} : { logger: httpLoggerOf(options.logger) }),
      bodyLimit: limits.bodyLimit,
      payloadLimit: limits.payloadLimit,
    });
    parts.mount(router);
    // The generated route tables are the newest versions'; events only a pinned older version
    // takes keep their routes for its instances (docs/versioning.md "HTTP").
    for (const { machine, ...registration } of config.registrations ?? [])
      router.mountPinnedRoutes(machine, registration);
    if (config.admin !== undefined) {
      mountAdminRoutes(router, {
        runtime,
        machines: parts.machines(),
        timers: config.timers ?? [],
        admin: config.admin,
        ...(parts.adminDiagrams === undefined ? {} : { diagrams: parts.adminDiagrams }),
      });
    }
    return router;
  } catch (error) {
    await runtime.close();
    throw error;
  }
}

/** The health routes of the config (none unless `health.enabled`), reading `runtime`'s store. */
export function appHealthRoutes(
  parts: GeneratedApp,
  runtime: MachineRuntime,
  shuttingDown: () => boolean,
): HealthRoute[] {
  return healthRoutes(parts.config.health, { store: runtime.store, shuttingDown });
}

/** The path of a request URL, without its query. */
export function pathOf(url: string | undefined): string {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
}

/**
 * The order of a graceful close: the HTTP drain, the framework's own close, then the runtime
 * (timer sweep, job worker with the time left for running jobs, store).
 */
export async function gracefulClose(
  drain: ServerDrain,
  timeoutMs: number,
  closeFramework: () => Promise<unknown>,
  runtime: MachineRuntime,
): Promise<CloseReport> {
  const started = Date.now();
  const { cut } = await drain.drain(timeoutMs);
  await closeFramework();
  await runtime.close({ jobTimeoutMs: Math.max(0, timeoutMs - (Date.now() - started)) });
  return { cutRequests: cut, elapsedMs: Date.now() - started };
}
