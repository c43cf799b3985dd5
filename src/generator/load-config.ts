/**
 * Loads `machine-routes.config.ts` straight from TypeScript, without a build step, in CommonJS
 * and ESM projects alike (jiti transpiles the config and every file of the user's it imports).
 *
 * Every load uses a fresh jiti instance without module cache, so loading twice (tests,
 * `generate --watch`) re-runs every `defineMachine` instead of reading a cache. The config's
 * `machine-routes` imports resolve to this very package, and the runtime and zod used for
 * validation are imported through the same instance: they are the ones the config's machines
 * were defined with, so `collectDefinitionIssues` sees their problems. (Its errors are not
 * instances of this module's error classes: tools recognise them by `code`.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Jiti } from 'jiti';
import { z } from 'zod';
import { InvalidConfigFileException, type MachineRoutesError } from '../runtime/errors.js';
import { FROM_SOURCES, OWN_ROOT } from '../runtime/own-root.js';
import type {
  checkTimerRegistrations,
  collectDefinitionIssues,
  MachineOperations,
  MachineRuntime,
  migrateInstances,
  openStore,
  planRegistration,
  resolveSettings,
  sweepTimers,
  systemClock,
  validateRouteNames,
} from '../runtime/index.js';
import { DEFAULT_CONFIG_FILE, type MachineRoutesConfig } from './config.js';
import { loadGeneratorDependency } from './dependencies.js';
import { isMachineRoutesError } from './issues.js';
import { loadErrorLocation } from './load-error-location.js';

/**
 * The members of the runtime package, as the config loaded it, that the generator and the CLI
 * call: theirs, not this module's copy, so `instanceof` holds on what the config's machines make.
 * Named one by one rather than `typeof import(...)`: the published declarations are bundled
 * (scripts/pack.js), and a bundler turns a module's type into a namespace it cannot declare.
 */
export interface RuntimeModule {
  MachineRuntime: typeof MachineRuntime;
  MachineOperations: typeof MachineOperations;
  checkTimerRegistrations: typeof checkTimerRegistrations;
  collectDefinitionIssues: typeof collectDefinitionIssues;
  migrateInstances: typeof migrateInstances;
  openStore: typeof openStore;
  planRegistration: typeof planRegistration;
  resolveSettings: typeof resolveSettings;
  sweepTimers: typeof sweepTimers;
  systemClock: typeof systemClock;
  validateRouteNames: typeof validateRouteNames;
}

/** zod as the config sees it (its registry holds the schemas' descriptions). */
export type ZodModule = typeof import('zod');

/** A loaded config with everything found while loading it. */
export interface LoadedConfig {
  /** Absolute path of the config file. */
  file: string;
  config: MachineRoutesConfig;
  /** The runtime instance the config's machines were defined with. */
  runtime: RuntimeModule;
  /** The zod instance the config's schemas were made with. */
  zod: ZodModule;
  /** Definition-time problems of every machine the config imported. */
  definitionIssues: MachineRoutesError[];
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** Config path (`--config`), relative to `cwd`; default `machine-routes.config.ts`. */
  config?: string;
  cwd: string;
}

const machineSchema = z.custom<MachineRoutesConfig['registrations'][number]['machine']>(
  (value) =>
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'machine',
  { message: 'must be a machine definition made with defineMachine()' },
);

const isFunction = (value: unknown): boolean => typeof value === 'function';

// tableModelBinder quotes identifiers and throws on anything else: say so at build time instead.
const sqlIdentifier = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain SQL identifier (letters, digits, _)');

const modelSchema = z.union(
  [
    z.strictObject({ table: sqlIdentifier, key: sqlIdentifier }),
    z.custom<object>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        !('table' in value) &&
        ['find', 'readMachineId', 'writeMachineId'].every((method) =>
          isFunction((value as Record<string, unknown>)[method]),
        ),
    ),
  ],
  {
    error: () =>
      'must be a table model { table, key } or a model binder { find, readMachineId, writeMachineId }',
  },
);

// Shape only: router options are validated by the runtime's own planning (planRegistration).
// The parsed copy is thrown away: the config is used as written (binders may be class instances).
const configSchema = z.object({
  registrations: z
    .array(z.looseObject({ machine: machineSchema }))
    .min(1, 'register at least one machine'),
  middleware: z
    .union([z.array(z.string().min(1)), z.record(z.string(), z.custom<unknown>(isFunction))])
    .optional(),
  // Keys, `missed`, schedules and duplicates are the runtime's to check (checkTimerRegistrations).
  timers: z.array(z.looseObject({ machine: machineSchema })).optional(),
  models: z.record(z.string(), modelSchema).optional(),
  setup: z
    .custom<unknown>(isFunction, { message: 'must be a function (store) => void' })
    .optional(),
  store: z.string().min(1).optional(),
  server: z
    .object({
      bodyLimit: z.number().int().positive().optional(),
      payloadLimit: z.number().int().positive().optional(),
      headersTimeout: z.number().int().nonnegative().optional(),
      requestTimeout: z.number().int().nonnegative().optional(),
    })
    .optional(),
  output: z
    .object({
      dir: z.string().min(1).optional(),
      framework: z.enum(['fastify', 'express']).optional(),
      kinds: z.array(z.enum(['handlers', 'openapi', 'client'])).optional(),
    })
    .optional(),
  client: z.object({ baseUrl: z.string().min(1).optional() }).optional(),
  scenarios: z.boolean().optional(),
  openapi: z
    .object({
      title: z.string().optional(),
      version: z.string().optional(),
      description: z.string().optional(),
      bearerAuthDescription: z.string().optional(),
    })
    .optional(),
});

// The package's own built entry points, for the config's `machine-routes` imports: the CLI and
// the config then share one runtime. Run from its TypeScript sources (this repository's tests),
// the loader points them at dist/ too (built by the tests' global setup): jiti resolves plain
// JavaScript many times faster than sources whose `.js` specifiers name `.ts` files.
const DIST = FROM_SOURCES ? new URL('../dist/', OWN_ROOT) : OWN_ROOT;
const ownEntry = (file: string): string => fileURLToPath(new URL(`${file}.js`, DIST));
const OWN_PACKAGE: Record<string, string> = {
  'machine-routes/config': ownEntry('config'),
  'machine-routes/runtime': ownEntry('runtime/index'),
  'machine-routes/fastify': ownEntry('fastify'),
  'machine-routes/express': ownEntry('express'),
  'machine-routes/postgres': ownEntry('postgres'),
  'machine-routes/client': ownEntry('client/runtime'),
  'machine-routes': ownEntry('index'),
};

/** The zod major this package is built on (its `z.toJSONSchema`, registries, error shapes). */
const ZOD_MAJOR = 4;

/**
 * The zod the config's files import. Throws when it is not zod 4: zod 3 fails later in ways that
 * name nothing the user can act on. A config outside any project with zod (a scratch file) gets
 * this package's own zod through an alias.
 */
function zodAlias(file: string): Record<string, string> {
  let manifest: string;
  try {
    manifest = createRequire(file).resolve('zod/package.json');
  } catch {
    return { zod: createRequire(import.meta.url).resolve('zod') };
  }
  const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown }).version;
  const major = typeof version === 'string' ? Number(version.split('.')[0]) : NaN;
  if (major === ZOD_MAJOR) return {};
  throw new InvalidConfigFileException(
    `machine-routes needs zod ${ZOD_MAJOR}, but this project has zod ${String(version)} ` +
      `(${path.dirname(manifest)}). Run npm install zod@^${ZOD_MAJOR}.`,
    { path: file, zodVersion: String(version) },
  );
}

/** A jiti instance of its own for one load: no module cache, source-mapped stack traces. */
function freshJiti(createJiti: typeof import('jiti').createJiti, file: string): Jiti {
  // Mapped stacks locate the user's defineMachine calls and the statements that throw.
  process.setSourceMapsEnabled(true);
  return createJiti(file, {
    moduleCache: false,
    sourceMaps: true,
    interopDefault: false,
    alias: { ...OWN_PACKAGE, ...zodAlias(file) },
  });
}

/** Absolute path of the config file to load; throws when there is none. */
export function resolveConfigFile(options: LoadConfigOptions): string {
  const file = path.resolve(options.cwd, options.config ?? DEFAULT_CONFIG_FILE);
  if (!existsSync(file)) {
    const shown = path.relative(options.cwd, file) || file;
    throw new InvalidConfigFileException(
      options.config === undefined
        ? `No ${DEFAULT_CONFIG_FILE} found in ${options.cwd}. Create one exporting defineConfig({ ... }), or pass --config <path>.`
        : `Config file '${shown}' does not exist. Check the --config path.`,
      { path: file },
    );
  }
  return file;
}

/** How one load imports the config, the runtime and zod. */
interface ConfigImporter {
  import<T>(id: string): Promise<T>;
}

/**
 * jiti (fresh, see `freshJiti`) when it is installed. A production install has the runtime only
 * (dependencies.ts): there a compiled JavaScript config is imported by Node itself, its
 * `machine-routes` imports resolve to this installed package, and this package's own built
 * runtime and zod are the instances the config's machines were made with.
 */
async function configImporter(file: string): Promise<ConfigImporter> {
  const javaScript = /\.[cm]?js$/.test(file);
  let jiti: typeof import('jiti');
  try {
    jiti = await loadGeneratorDependency('jiti');
  } catch (error) {
    if (!javaScript || !isMachineRoutesError(error)) throw error;
    const native: Record<string, string> = {
      'machine-routes/runtime': pathToFileURL(OWN_PACKAGE['machine-routes/runtime']!).href,
      zod: 'zod',
    };
    return { import: (id) => import(native[id] ?? pathToFileURL(id).href) };
  }
  return freshJiti(jiti.createJiti, file);
}

/**
 * The config module's default export. A CommonJS config compiled by tsc sets `exports.default`:
 * Node's `import()` gives its whole `module.exports` as `default`.
 */
function defaultExport(module: { default?: unknown } | undefined): unknown {
  const value = module?.default;
  const compiled = value as { __esModule?: unknown; default?: unknown } | null | undefined;
  return typeof compiled === 'object' && compiled?.__esModule === true ? compiled.default : value;
}

/**
 * Imports the config and every machine it references. Definition-time problems are collected,
 * not thrown; a config that cannot be imported or has the wrong shape throws
 * `InvalidConfigFileException`.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const file = resolveConfigFile(options);
  const importer = await configImporter(file);
  try {
    const runtime = await importer.import<RuntimeModule>('machine-routes/runtime');
    const zod = await importer.import<ZodModule>('zod');
    const {
      result: module,
      error,
      issues,
    } = await runtime.collectDefinitionIssues(() => importer.import<{ default?: unknown }>(file));
    if (error !== undefined) throw error;
    const exported = defaultExport(module);
    const parsed = configSchema.safeParse(exported);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || '(default export)'}: ${issue.message}`,
      );
      throw new InvalidConfigFileException(
        `${path.basename(file)} must export defineConfig({ ... }) as default: ${problems.join('; ')}.`,
        { path: file },
      );
    }
    return {
      file,
      config: exported as MachineRoutesConfig,
      runtime,
      zod,
      definitionIssues: issues,
    };
  } catch (error) {
    // Our own error, or a runtime error thrown outside definition collection: report it as it is.
    if (error instanceof InvalidConfigFileException || isMachineRoutesError(error)) throw error;
    // The first line only: the rest is a require stack or a code frame; the place is located.
    const message = error instanceof Error ? error.message.split('\n')[0]!.trim() : String(error);
    const location = loadErrorLocation(error);
    throw new InvalidConfigFileException(`Could not load ${path.basename(file)}: ${message}`, {
      path: file,
      ...(location === undefined ? {} : { location }),
    });
  }
}
