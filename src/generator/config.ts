/**
 * What users write in `machine-routes.config.ts`: `defineConfig` and its types. Defaults are
 * applied where they are read (generate.ts), so the config stays exactly as written.
 */
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { MiddlewareRegistry } from '../runtime/http/middleware-registry.js';
import type { ModelBinder, RegistrationOptions } from '../runtime/http/types.js';
import type { Framework } from './emitters/types.js';

/** Output kinds `generate` can emit; each has one emitter. */
export type OutputKind = 'handlers' | 'openapi' | 'client';

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
  /** Model binders by model name (the `model` option of a registration). */
  models?: Readonly<Record<string, ModelBinder>>;
  /**
   * Store URL of the generated server: `sqlite:<file>`, `sqlite::memory:`, `postgres://...`.
   * Default: `MACHINE_DATABASE_URL`, else the embedded SQLite file (the runtime's defaults).
   */
  store?: string;
  output?: OutputConfig;
  /** Options of the emitted client. */
  client?: ClientConfig;
  /** `info` of the emitted OpenAPI document. */
  openapi?: { title?: string; version?: string };
}

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
