/**
 * `machine-routes`: `defineConfig` and its types, and the generator API.
 *
 * A config imports `machine-routes/config` instead (the same config names without the generator
 * API), so that a generated server, which imports its config, loads no generator module. This
 * module imports no build tool either: the pipeline functions (`loadConfig`, `checkProject`,
 * `renderFiles`, `renderProject`) load the generator on first call.
 * The pipeline is `loadConfig -> buildManifest -> emitters -> format`.
 */
export * from './config.js';
export { checkProject, loadConfig, renderFiles, renderProject } from './generator/api.js';
export {
  buildManifest,
  type BuildManifestOptions,
  type ManifestResult,
} from './generator/build-manifest.js';
export type { CheckReport, RenderedProject } from './generator/generate.js';
export type { LoadConfigOptions, LoadedConfig } from './generator/load-config.js';
export type { EmitOptions, Emitter } from './generator/emitters/types.js';
export { diffOutput, writeOutput, type OutputDiff } from './generator/write-files.js';
export { formatIssue, type Issue } from './generator/issues.js';
export type {
  GeneratedFile,
  JsonSchema,
  JsonValue,
  ManifestMachine,
  ManifestRegistration,
  ManifestRoute,
  RouteManifest,
} from './generator/manifest.js';
