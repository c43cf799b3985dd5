/**
 * `machine-routes`: the generator API and `defineConfig`.
 *
 * The pipeline is `loadConfig -> buildManifest -> emitters -> formatFiles`; `checkProject` and
 * `renderProject` run it end to end, as the `check` and `generate` commands do.
 */
export {
  defineConfig,
  type ClientConfig,
  type MachineRoutesConfig,
  type OutputConfig,
  type OutputKind,
  type RegistrationConfig,
} from './generator/config.js';
export {
  loadConfig,
  DEFAULT_CONFIG_FILE,
  type LoadConfigOptions,
  type LoadedConfig,
} from './generator/load-config.js';
export {
  buildManifest,
  type BuildManifestOptions,
  type ManifestResult,
} from './generator/build-manifest.js';
export {
  checkProject,
  renderFiles,
  renderProject,
  DEFAULT_OUTPUT_DIR,
  type CheckReport,
  type RenderedProject,
} from './generator/generate.js';
export { emitterFor, OUTPUT_KINDS } from './generator/emitters/index.js';
export type { EmitOptions, Emitter, Framework } from './generator/emitters/types.js';
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
