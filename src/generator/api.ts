/**
 * The generator's entry points as the package root exports them. Each loads its module on
 * first call: the root module is imported by every generated server (through its config), and
 * must not pull tsx's loader, handlebars, prettier or ts-morph into it.
 */
import type { OutputKind } from './config.js';
import type { EmitOptions } from './emitters/types.js';
import type { CheckReport, RenderedProject } from './generate.js';
import type { LoadConfigOptions, LoadedConfig } from './load-config.js';
import type { GeneratedFile, RouteManifest } from './manifest.js';

/**
 * Imports the config and every machine it references (see `load-config.ts`).
 * Throws `InvalidConfigFileException` for a config that cannot be imported or has the wrong shape.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  return (await import('./load-config.js')).loadConfig(options);
}

/** Loads the config and runs every build-time validation; problems are returned, not thrown. */
export async function checkProject(
  options: LoadConfigOptions & { exampleRuns?: boolean },
): Promise<CheckReport> {
  return (await import('./generate.js')).checkProject(options);
}

/** Runs the emitters of `kinds` (default: all) on a manifest and formats their files. */
export async function renderFiles(
  manifest: RouteManifest,
  options: EmitOptions,
  kinds?: readonly OutputKind[],
): Promise<GeneratedFile[]> {
  return (await import('./generate.js')).renderFiles(manifest, options, kinds);
}

/**
 * Checks the project and renders every output file in memory; throws what `check` would
 * report (one error, or an aggregate carrying `.issues`).
 */
export async function renderProject(options: LoadConfigOptions): Promise<RenderedProject> {
  return (await import('./generate.js')).renderProject(options);
}
