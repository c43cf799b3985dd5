/**
 * What users write in `machine-routes.config.ts`: `defineConfig` and its types. Defaults are
 * applied where they are read (generate.ts), so the config stays exactly as written.
 *
 * The generated server imports the config, so this module is part of its import graph: it
 * imports types only, never the generator.
 */
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { TimerRegistration } from '../runtime/definition/timer-registration.js';
import type { MiddlewareRegistry } from '../runtime/http/middleware-registry.js';
import type { AdminOptions } from '../runtime/http/admin/admin-options.js';
import type { HealthOptions } from '../runtime/http/health.js';
import type { ServerOptions } from '../runtime/http/server-options.js';
import type { ModelBinder, RegistrationOptions } from '../runtime/http/types.js';
import type { Store } from '../runtime/persistence/store.js';
import type { ExactKeys, KNOWN_KEYS } from '../runtime/known-keys.js';

/** HTTP frameworks the handler emitter targets. */
export type Framework = 'fastify' | 'express';

/** Output kinds `generate` can emit; each has one emitter. */
export type OutputKind = 'handlers' | 'openapi' | 'client';

/** Every output kind, in the order files are emitted. */
export const OUTPUT_KINDS: readonly OutputKind[] = ['handlers', 'openapi', 'client'];

/** The default config file name looked up in the working directory. */
export const DEFAULT_CONFIG_FILE = 'machine-routes.config.ts';

/** Default output directory, relative to the config file. */
export const DEFAULT_OUTPUT_DIR = 'src/generated';

/**
 * A model kept in a table of the application's own store (SQLite or PostgreSQL): the generated
 * app turns it into `tableModelBinder({ store, table, key })` once the store is open.
 */
export interface TableModelConfig {
  /** Table holding the records (`invoices`); a plain SQL identifier. */
  table: string;
  /** Column the route parameter is matched against (`number`); a plain SQL identifier. */
  key: string;
}

/** A model of the config: a table of the store, or a binder object of your own. */
export type ModelConfig = TableModelConfig | ModelBinder;

/** One `MachineRouter.register` call: a machine and its router options. */
export interface RegistrationConfig extends RegistrationOptions {
  machine: MachineDefinition;
}

/** Where and what `generate` writes. */
export interface OutputConfig {
  /** Output directory, relative to the config file (default `src/generated`). */
  dir?: string;
  /** Framework of the emitted route handlers (default `fastify`). */
  framework?: Framework;
  /** Output kinds to emit (default: all). */
  kinds?: readonly OutputKind[];
}

/** Options of the emitted client. */
export interface ClientConfig {
  /** Base URL `createClient` uses when none is given (e.g. `'/api'` for a same-origin frontend). */
  baseUrl?: string;
  /**
   * Also emit TanStack Query bindings of the client (`query.gen.ts`): query keys per
   * instance, a query per read, a mutation per event writing its answer to the instance's
   * cache. They import types from `@tanstack/query-core` (an optional peer dependency) and no
   * framework adapter (docs/client.md). Default false.
   */
  tanstackQuery?: boolean;
}

/** The `machine-routes.config.ts` default export. */
export interface MachineRoutesConfig {
  registrations: readonly RegistrationConfig[];
  /**
   * Middleware routes may use (`auth` covers `auth:admin`); `check` rejects any other name.
   * Either the registry itself (the generated server then uses it), or only its names when the
   * implementations are handed to the generated app elsewhere.
   */
  middleware?: MiddlewareRegistry | readonly string[];
  /**
   * Machines whose timed transitions (`after` / `every`) fire: one entry per machine with
   * timers (spec 9.3.0; `check` reports a machine with timers that has none). The generated
   * app's worker, `machine-routes worker` and `machine-routes timers --once` sweep them.
   */
  timers?: readonly TimerRegistration[];
  /** Models by name (the `model` option of a registration): a table of the store or a binder. */
  models?: Readonly<Record<string, ModelConfig>>;
  /**
   * Runs once the generated app has opened its store, before any route is mounted: create and
   * seed the tables your models read. It runs at every start, so it must be idempotent.
   */
  setup?: (store: Store) => void | Promise<void>;
  /**
   * Store URL of the generated server and the commands: `sqlite:<file>`, `sqlite::memory:`,
   * `postgres://...`. A `--database` flag, then `MACHINE_DATABASE_URL`, take precedence over it
   * (`resolveStoreUrl`); without all three, the embedded SQLite file `./data/machines.db`.
   */
  store?: string;
  /**
   * Limits of the generated server: `headersTimeout` (default 10 s) and `requestTimeout`
   * (default 30 s, body included) in milliseconds, `bodyLimit` (1 MiB) and `payloadLimit`
   * (64 KiB per event payload) in bytes. `buildApp({ server })` overrides them.
   */
  server?: ServerOptions;
  output?: OutputConfig;
  /** Options of the emitted client. */
  client?: ClientConfig;
  /** Texts of the emitted OpenAPI document. */
  openapi?: OpenApiConfig;
  /**
   * Document the scenario fields (docs/scenarios.md) in the OpenAPI document and the client:
   * `scenario` (the machine's slugs as an enum, or null) and `scenarioParams` on event routes,
   * `availableScenarios` and `activeScenario` in their answers. The server plays scenarios only
   * when it runs with `MACHINE_SCENARIOS_ENABLED=true`; the answer fields are optional so the
   * document stays true with scenarios off. Default false.
   */
  scenarios?: boolean;
  /** The API reference the generated app serves (`/openapi.json`, `/docs`); off by default. */
  docs?: DocsConfig;
  /**
   * Liveness and readiness routes of the generated app (`GET /health/live`, `GET /health/ready`
   * with `{ enabled: true }`; `path` moves them; docs/operating.md "Health"). Off by default, and
   * never in the OpenAPI document: they describe the process, not the API.
   */
  health?: HealthOptions;
  /**
   * The admin route group of the generated app (docs/operations.md "Admin routes"): the
   * instances of every machine listed, inspected and repaired over HTTP under `prefix` (default
   * `/admin`), and the console page `<prefix>/console`, every route behind `middleware`
   * (required: `check` refuses the group without one). Documented in the OpenAPI document under
   * the tag `admin`. Off when absent.
   */
  admin?: AdminOptions;
}

/**
 * The API reference of the generated app: `GET <prefix>/openapi.json` (the emitted document)
 * and `GET <prefix>/docs`, a Redoc page with each machine's state diagram (drawn as SVG by
 * `generate`), whose script ships inside machine-routes (no CDN, works offline, nothing to
 * install at run time). Needs the `openapi` output kind.
 */
export interface DocsConfig {
  /** Serve the document and the page. */
  enabled: boolean;
  /**
   * Where the reference sits inside the app (`/reference`: `/reference/docs`); default the
   * app's root. Not the path the app is mounted under: that is read from each request.
   */
  prefix?: string;
}

/** Texts of the emitted OpenAPI document. */
export interface OpenApiConfig {
  /** `info.title` (default `machine-routes API`). */
  title?: string;
  /** `info.version` (default `1.0.0`). */
  version?: string;
  /** `info.description`. */
  description?: string;
  /**
   * Description of the `bearerAuth` security scheme that routes behind an `auth` middleware
   * require: which tokens the API accepts and how to get one.
   */
  bearerAuthDescription?: string;
  /**
   * `servers` of the document: where the API is served. Default: the origin that serves the
   * document (`[{ url: '/' }]`), right for the generated app's own `/openapi.json`.
   */
  servers?: readonly OpenApiServer[];
  /** `info.license`: `{ name: 'MIT', identifier: 'MIT' }`. */
  license?: { name: string; identifier?: string; url?: string };
}

/** One entry of the document's `servers`. */
export interface OpenApiServer {
  url: string;
  description?: string;
}

// The keys `check` accepts (src/runtime/known-keys.ts) are exactly the keys of these types.
true satisfies ExactKeys<MachineRoutesConfig, typeof KNOWN_KEYS.config>;
true satisfies ExactKeys<OutputConfig, typeof KNOWN_KEYS.output>;
true satisfies ExactKeys<OpenApiConfig, typeof KNOWN_KEYS.openapi>;
true satisfies ExactKeys<ClientConfig, typeof KNOWN_KEYS.client>;
true satisfies ExactKeys<DocsConfig, typeof KNOWN_KEYS.docs>;
true satisfies ExactKeys<ServerOptions, typeof KNOWN_KEYS.server>;
true satisfies ExactKeys<HealthOptions, typeof KNOWN_KEYS.health>;
true satisfies ExactKeys<AdminOptions, typeof KNOWN_KEYS.admin>;

/**
 * Declares the config with its types checked; returns it unchanged.
 *
 * @example
 * export default defineConfig({
 *   registrations: [{ machine: orderMachine, prefix: 'orders', create: true, machineIdFor: ['SUBMIT'] }],
 *   output: { dir: 'src/generated', framework: 'fastify' },
 * });
 */
export function defineConfig(config: MachineRoutesConfig): MachineRoutesConfig {
  return config;
}

/** The middleware names a config declares. */
export function declaredMiddleware(config: MachineRoutesConfig): string[] {
  const middleware = config.middleware ?? [];
  return isNameList(middleware) ? [...middleware] : Object.keys(middleware);
}

function isNameList(
  middleware: MiddlewareRegistry | readonly string[],
): middleware is readonly string[] {
  return Array.isArray(middleware);
}

/** Name of a registration: the `name` option, else the machine id (the runtime's default too). */
export function registrationName(registration: RegistrationConfig): string {
  return typeof registration.name === 'string' && registration.name !== ''
    ? registration.name
    : registration.machine.id;
}
