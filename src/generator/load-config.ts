/**
 * Loads `machine-routes.config.ts` straight from TypeScript, without a build step.
 *
 * The config is imported in a fresh tsx namespace, so loading twice (tests, `generate --check`
 * after a change) re-runs every `defineMachine` instead of reading a module cache. The runtime
 * module used for validation is imported in that same namespace: it is the very instance the
 * config's machines were defined with, so `collectDefinitionIssues` sees their problems. (Its
 * errors are not instances of this module's error classes: tools recognise them by `code`.)
 */
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { register, type NamespacedUnregister } from 'tsx/esm/api';
import { z } from 'zod';
import { InvalidConfigFileException, type MachineRoutesError } from '../runtime/errors.js';
import { DEFAULT_CONFIG_FILE, type MachineRoutesConfig } from './config.js';
import { isMachineRoutesError } from './issues.js';

/** The runtime package as the config sees it. */
export type RuntimeModule = typeof import('../runtime/index.js');

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

const OWN_RUNTIME = new URL('../runtime/index.ts', import.meta.url).href;

/**
 * Imports `specifier` as the config resolves it (the instance its machines use). A config
 * outside any project depending on machine-routes gets `fallback`, resolved from this module.
 */
async function importFromConfig(
  namespace: NamespacedUnregister,
  specifier: string,
  configUrl: string,
  fallback: string,
): Promise<unknown> {
  try {
    return await namespace.import(specifier, configUrl);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return namespace.import(fallback, import.meta.url);
  }
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

/**
 * Imports the config and every machine it references. Definition-time problems are collected,
 * not thrown; a config that cannot be imported or has the wrong shape throws
 * `InvalidConfigFileException`.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const file = resolveConfigFile(options);
  const url = pathToFileURL(file).href;
  const namespace = register({ namespace: `machine-routes-${randomUUID()}` });
  try {
    const runtime = (await importFromConfig(
      namespace,
      'machine-routes/runtime',
      url,
      OWN_RUNTIME,
    )) as RuntimeModule;
    const zod = (await importFromConfig(namespace, 'zod', url, 'zod')) as ZodModule;
    const {
      result: module,
      error,
      issues,
    } = await runtime.collectDefinitionIssues(
      () => namespace.import(url, import.meta.url) as Promise<{ default?: unknown }>,
    );
    if (error !== undefined) throw error;
    const parsed = configSchema.safeParse(module?.default);
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
      config: module?.default as MachineRoutesConfig,
      runtime,
      zod,
      definitionIssues: issues,
    };
  } catch (error) {
    // Our own error, or a runtime error thrown outside definition collection: report it as it is.
    if (error instanceof InvalidConfigFileException || isMachineRoutesError(error)) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new InvalidConfigFileException(`Could not load ${path.basename(file)}: ${message}`, {
      path: file,
    });
  } finally {
    await namespace.unregister();
  }
}
