/**
 * The build-time pipeline: load config -> validate and build the manifest -> emit -> format.
 * `check`, `generate` and `routes` are views of it; nothing here writes files or prints.
 */
import path from 'node:path';
import {
  MissingPeerDependencyException,
  throwIfAny,
  type MachineRoutesError,
  type SourceLocation,
} from '../runtime/errors.js';
import { neverSucceeding, type AnalysedRegistration } from './analysis/never-succeeds.js';
import { buildManifest } from './build-manifest.js';
import type { DiagramSvgOptions } from './diagram-svgs.js';
import { adminPrefix } from '../runtime/http/admin/admin-options.js';
import { DEFAULT_OUTPUT_DIR, OUTPUT_KINDS, registrationName, type OutputKind } from './config.js';
import { emitterFor } from './emitters/index.js';
import type { EmitOptions } from './emitters/types.js';
import { formatFiles, type FormatCache } from './format.js';
import { flattenIssues, isMachineRoutesError, issueAt, sortIssues, type Issue } from './issues.js';
import { loadConfig, type LoadConfigOptions, type LoadedConfig } from './load-config.js';
import type { IssueLocator } from './locate-issues.js';
import type { GeneratedFile, RouteManifest } from './manifest.js';
import { sortBy } from './naming.js';
import { loadTemplateEngine } from './templates.js';

/** What `check` found. */
export interface CheckReport {
  /** Every problem, located and sorted by file and line. */
  issues: Issue[];
  /** The same problems as thrown errors (what the API throws). */
  errors: MachineRoutesError[];
  /** The manifest, when there was no problem. */
  manifest: RouteManifest | null;
  /** The loaded config, when it could be loaded. */
  loaded: LoadedConfig | null;
}

/** Output of `generate`, rendered in memory. */
export interface RenderedProject {
  /** Absolute output directory. */
  outputDir: string;
  manifest: RouteManifest;
  /** Formatted files, sorted by path. */
  files: GeneratedFile[];
  /** What could not be generated and why (a state diagram not drawn). */
  warnings: string[];
}

/**
 * The files with the reference page's state diagrams drawn as SVG when the config serves the
 * page (`docs`) and emits the diagrams (diagram-svgs.ts).
 */
export async function withDrawnDiagrams(
  files: GeneratedFile[],
  options: EmitOptions,
  drawing: DiagramSvgOptions,
): Promise<{ files: GeneratedFile[]; warnings: string[] }> {
  if ((options.docs ?? null) === null && (options.admin ?? null) === null)
    return { files, warnings: [] };
  if (!files.some((file) => file.path === 'openapi.json')) return { files, warnings: [] };
  const { addDiagramSvgs } = await import('./diagram-svgs.js');
  return addDiagramSvgs(files, drawing);
}

/** Absolute output directory of a loaded config. */
export function outputDirOf(loaded: LoadedConfig): string {
  return path.resolve(path.dirname(loaded.file), loaded.config.output?.dir ?? DEFAULT_OUTPUT_DIR);
}

/** Emitter options of a loaded config, defaults applied. */
export function emitOptionsOf(loaded: LoadedConfig): EmitOptions {
  return {
    framework: loaded.config.output?.framework ?? 'fastify',
    openapi: {
      title: loaded.config.openapi?.title ?? 'machine-routes API',
      version: loaded.config.openapi?.version ?? '1.0.0',
      description: loaded.config.openapi?.description ?? null,
      bearerAuthDescription: loaded.config.openapi?.bearerAuthDescription ?? null,
      license: loaded.config.openapi?.license ?? null,
      ...(loaded.config.openapi?.servers === undefined
        ? {}
        : { servers: loaded.config.openapi.servers.map((server) => ({ ...server })) }),
    },
    client: {
      baseUrl: loaded.config.client?.baseUrl ?? null,
      tanstackQuery: loaded.config.client?.tanstackQuery ?? false,
    },
    docs: loaded.config.docs?.enabled === true ? { prefix: loaded.config.docs.prefix ?? '' } : null,
    admin:
      loaded.config.admin === undefined
        ? null
        : {
            prefix: adminPrefix(loaded.config.admin),
            middleware: [...(loaded.config.admin.middleware ?? [])],
          },
  };
}

/**
 * What `check` warns about in a project without problems (analysis/never-succeeds.ts): stateless
 * routes the initial state refuses, events nothing sends, states nothing enters; located and
 * sorted like problems. `[]` for a report with problems.
 */
export async function checkWarnings(report: CheckReport): Promise<Issue[]> {
  if (report.manifest === null || report.loaded === null) return [];
  const found = neverSucceeding(
    analysedRegistrations(report.loaded, report.manifest),
    report.loaded.config.timers,
  );
  return found.length === 0 ? [] : locateAll(report.loaded, found);
}

function analysedRegistrations(
  loaded: LoadedConfig,
  manifest: RouteManifest,
): AnalysedRegistration[] {
  const routes = new Map(manifest.registrations.map((entry) => [entry.name, entry.routes]));
  return loaded.config.registrations.map((registration) => {
    const name = registrationName(registration);
    return { name, machine: registration.machine, routes: routes.get(name) ?? [] };
  });
}

async function locateAll(
  loaded: LoadedConfig,
  errors: readonly MachineRoutesError[],
): Promise<Issue[]> {
  // ts-morph (and the TypeScript compiler it carries) is loaded only when there is something to locate.
  const { createSourceLocator } = await import('./locate-issues.js');
  const registrationIndex = new Map(
    loaded.config.registrations.map((registration, index) => [
      registrationName(registration),
      index,
    ]),
  );
  const machineSources = new Map<string, SourceLocation>();
  for (const { machine } of loaded.config.registrations) {
    if (machine.source !== undefined) machineSources.set(machine.id, machine.source);
  }
  let locator: IssueLocator;
  try {
    locator = await createSourceLocator({
      configFile: loaded.file,
      registrationIndex,
      machineSources,
    });
  } catch (error) {
    // A production install (a worker) has no ts-morph: the problems at the places they carry.
    if (!(error instanceof MissingPeerDependencyException)) throw error;
    return sortIssues(errors.map((issue) => issueAt(issue, issue.details.location ?? null)));
  }
  return sortIssues(errors.map((error) => locator.locate(error)));
}

/**
 * Loads the config and runs every definition-time and registration-time validation. Never
 * throws for a problem of the user's input: a config that cannot be loaded is one issue.
 */
export async function checkProject(
  options: LoadConfigOptions & { exampleRuns?: boolean },
): Promise<CheckReport> {
  let loaded: LoadedConfig;
  try {
    loaded = await loadConfig(options);
  } catch (error) {
    if (!isMachineRoutesError(error)) throw error;
    const file = typeof error.details.path === 'string' ? error.details.path : null;
    const errors = flattenIssues(error);
    const issues = errors.map((issue) =>
      issueAt(
        issue,
        issue.details.location ?? (file === null ? null : { file, line: 1, column: 1 }),
      ),
    );
    return { issues: sortIssues(issues), errors, manifest: null, loaded: null };
  }
  const result = buildManifest({
    loaded,
    outputDir: outputDirOf(loaded),
    ...(options.exampleRuns === undefined ? {} : { exampleRuns: options.exampleRuns }),
  });
  if (result.ok) return { issues: [], errors: [], manifest: result.manifest, loaded };
  const errors = result.issues.flatMap(flattenIssues);
  return { issues: await locateAll(loaded, errors), errors, manifest: null, loaded };
}

/**
 * Runs every emitter of `kinds` and formats the result; pure apart from prettier. `cache`
 * keeps prettier's results between runs (`generate --watch`).
 */
export async function renderFiles(
  manifest: RouteManifest,
  options: EmitOptions,
  kinds: readonly OutputKind[] = OUTPUT_KINDS,
  cache?: FormatCache,
): Promise<GeneratedFile[]> {
  await loadTemplateEngine();
  const files = kinds.flatMap((kind) => emitterFor(kind)(manifest, options));
  return sortBy(await formatFiles(files, cache), (file) => file.path);
}

/**
 * Checks the project and renders every output file in memory. Throws the problems `check`
 * would report: the single error, or an `AggregateMachineRoutesError` carrying `.issues`.
 */
export async function renderProject(options: LoadConfigOptions): Promise<RenderedProject> {
  const report = await checkProject(options);
  if (report.manifest === null || report.loaded === null) {
    throwIfAny(report.errors);
    throw new Error('check failed without reporting a problem');
  }
  const emitOptions = emitOptionsOf(report.loaded);
  const outputDir = outputDirOf(report.loaded);
  const kinds = report.loaded.config.output?.kinds;
  const rendered = await renderFiles(report.manifest, emitOptions, kinds);
  const drawing = { outputDir, draw: true };
  const { files, warnings } = await withDrawnDiagrams(rendered, emitOptions, drawing);
  return { outputDir, manifest: report.manifest, files, warnings };
}
