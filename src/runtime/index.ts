/**
 * `machine-routes/runtime`: the interpreter package the generated code links against.
 * Each area keeps its own barrel; this file only joins them.
 */
export * from './errors.js';
export * from './definition/index.js';
export * from './interpreter/index.js';
export * from './persistence/index.js';
export * from './jobs/index.js';
export * from './engine/index.js';
export * from './http/index.js';
export { ManualClock, systemClock, type Clock } from './clock.js';
export {
  ENVIRONMENT_SETTINGS,
  parseEnvironment,
  layeredEnvironment,
  readEnvironment,
  type Environment,
  type EnvironmentSettings,
  type ParsedEnvironment,
  type SettingKey,
} from './environment.js';
export {
  DEFAULT_STORE_URL,
  describeStoreUrl,
  redactStoreUrl,
  resolveStoreUrl,
  resolveStoreUrlSync,
  type ResolvedStoreUrl,
  type StoreUrlSources,
  type StoreUrlSource,
} from './store-url.js';
export { stderrLogger, type Logger } from './logger.js';
