/**
 * Liveness and readiness answers of a server (config `health`, docs/operating.md "Health"),
 * framework-neutral: the app library serves them as plain GET routes, off the OpenAPI document
 * (like `/openapi.json` and `/docs`, they describe the process, not the API).
 *
 * - Liveness, `GET <path>/live`: 200 while the process runs and its event loop answers, also while
 *   it shuts down (a restart would not help a draining server).
 * - Readiness, `GET <path>/ready`: 200 only when the store answers a cheap query (the applied
 *   migrations, one indexed read), none of this version's migrations is missing, and the server
 *   is not shutting down; else 503 naming each failing check.
 */
import type { EndpointResponse } from '../definition/endpoint-config.js';
import { pendingMigrations } from '../persistence/migrations.js';
import type { Store } from '../persistence/store.js';
import { SHUTDOWN_RETRY_AFTER } from './response-bodies.js';

/** The `health` section of the config (and of the generated `buildApp`). */
export interface HealthOptions {
  /** Serve the liveness and readiness routes (default false: no route at all). */
  enabled: boolean;
  /**
   * Where they sit inside the app: `<path>/live` and `<path>/ready` (default `/health`). Under
   * the path the app is mounted at, as every route of the app.
   */
  path?: string;
  /** Milliseconds the readiness check waits for the store before it fails (default 2000). */
  timeoutMs?: number;
}

/** Default `health.path`. */
export const DEFAULT_HEALTH_PATH = '/health';
/** Default `health.timeoutMs`. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 2_000;

/** One check of the readiness answer. */
export interface HealthCheck {
  status: 'pass' | 'fail';
  /** Why it fails (absent when it passes). */
  message?: string;
}

/** The body of a readiness answer. */
export interface ReadinessBody {
  status: 'pass' | 'fail';
  /** The failing checks in one sentence (absent when ready): the shape of every error body. */
  message?: string;
  checks: { store: HealthCheck; migrations: HealthCheck; shutdown: HealthCheck };
}

/** A health route: its path and its answer. */
export interface HealthRoute {
  path: string;
  answer(): Promise<EndpointResponse>;
}

/** What the readiness check reads. */
export interface ReadinessSource {
  store: Store;
  /** True once the server started shutting down (the drain, or the app's close). */
  shuttingDown(): boolean;
  timeoutMs?: number;
}

const NO_STORE = { 'cache-control': 'no-store' };

/** `path` without its trailing slash, with a leading one; `''` for the root. */
function normalizePath(path: string | undefined): string {
  const trimmed = (path ?? DEFAULT_HEALTH_PATH).replace(/\/+$/, '');
  return trimmed === '' || trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** The two routes of `options`, or none when health is off. */
export function healthRoutes(
  options: HealthOptions | undefined,
  source: ReadinessSource,
): HealthRoute[] {
  if (options?.enabled !== true) return [];
  const base = normalizePath(options.path);
  const timeoutMs = options.timeoutMs ?? source.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS;
  return [
    {
      path: `${base}/live`,
      answer: async () => ({ status: 200, body: { status: 'pass' }, headers: NO_STORE }),
    },
    { path: `${base}/ready`, answer: () => readiness({ ...source, timeoutMs }) },
  ];
}

/** The readiness answer now: 200 `{ status: 'pass', checks }`, else 503 naming what fails. */
export async function readiness(source: ReadinessSource): Promise<EndpointResponse> {
  const shutdown: HealthCheck = source.shuttingDown()
    ? { status: 'fail', message: 'the server is shutting down' }
    : { status: 'pass' };
  const { store, migrations } = await storeChecks(
    source.store,
    source.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS,
  );
  const checks = { store, migrations, shutdown };
  const failing = Object.entries(checks).filter(([, check]) => check.status === 'fail');
  if (failing.length === 0) {
    return { status: 200, body: { status: 'pass', checks }, headers: NO_STORE };
  }
  const body: ReadinessBody = {
    status: 'fail',
    message: `Not ready: ${failing.map(([name, check]) => `${name}: ${check.message}`).join('; ')}.`,
    checks,
  };
  return {
    status: 503,
    body,
    headers: { ...NO_STORE, 'retry-after': SHUTDOWN_RETRY_AFTER },
  };
}

/** Stores that can list their applied migrations (SQLite synchronously, PostgreSQL not). */
interface MigratedStore {
  appliedMigrations(): number[] | Promise<number[]>;
}

/**
 * One query answers both: the versions in `schema_migrations`. A store that cannot answer in
 * `timeoutMs` (a PostgreSQL server gone, a pool waiting for a connection) fails `store`; a
 * missing table or missing versions fail `migrations`.
 */
async function storeChecks(
  store: Store,
  timeoutMs: number,
): Promise<{ store: HealthCheck; migrations: HealthCheck }> {
  const pass: HealthCheck = { status: 'pass' };
  const reader = store as Partial<MigratedStore>;
  // The memory store has no schema: answering is all it can do.
  if (typeof reader.appliedMigrations !== 'function') return { store: pass, migrations: pass };
  let timer: NodeJS.Timeout | undefined;
  try {
    const applied = await Promise.race([
      Promise.resolve().then(() => reader.appliedMigrations!()),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        timer.unref();
      }),
    ]);
    const pending = pendingMigrations(applied);
    if (pending.length === 0) return { store: pass, migrations: pass };
    const versions = pending.map((migration) => `${migration.version} ${migration.name}`);
    return {
      store: pass,
      migrations: {
        status: 'fail',
        message: `${pending.length} migration(s) missing (${versions.join(', ')}): run machine-routes migrate`,
      },
    };
  } catch (error) {
    if (missingMigrationsTable(error)) {
      return {
        store: pass,
        migrations: {
          status: 'fail',
          message: 'the store has no schema_migrations table: run machine-routes migrate',
        },
      };
    }
    return { store: { status: 'fail', message: storeMessage(error) }, migrations: pass };
  } finally {
    clearTimeout(timer);
  }
}

/** PostgreSQL's undefined_table (42P01), SQLite's "no such table". */
function missingMigrationsTable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '42P01') return true;
  return error instanceof Error && /no such table: schema_migrations/.test(error.message);
}

/** The store's failure without secrets: the driver's code and message (no URL is in them). */
function storeMessage(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return `the store does not answer (${typeof code === 'string' ? `${code}: ` : ''}${message})`;
}
