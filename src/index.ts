/**
 * `machine-routes`: `defineConfig` and its types, and the generator API.
 *
 * Every generated server imports this module through its config, so it stays light: what is
 * exported here as a value imports no build tool, and the pipeline functions (`loadConfig`,
 * `checkProject`, `renderFiles`, `renderProject`) load the generator on first call.
 * The pipeline is `loadConfig -> buildManifest -> emitters -> format`.
 */
export {
  defineConfig,
  DEFAULT_CONFIG_FILE,
  DEFAULT_OUTPUT_DIR,
  OUTPUT_KINDS,
  type ClientConfig,
  type DocsConfig,
  type Framework,
  type MachineRoutesConfig,
  type ModelConfig,
  type OpenApiConfig,
  type OpenApiServer,
  type OutputConfig,
  type OutputKind,
  type RegistrationConfig,
  type TableModelConfig,
} from './generator/config.js';
export { isTableModel, resolveModelBinders } from './generator/models.js';
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
