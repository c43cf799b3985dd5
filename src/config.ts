/**
 * `machine-routes/config`: `defineConfig` and the config types, for `machine-routes.config.ts`,
 * and `resolveModelBinders`, which the generated app calls on the config's `models`.
 *
 * The generated server imports its config at run time (the machines, middleware and `setup` are
 * the config's values), so this entry is what a config adds to every server's start-up: it
 * imports no generator module. The package root `machine-routes` exports the same names, plus
 * the generator API and what it loads eagerly (the manifest builder and its analyses).
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
