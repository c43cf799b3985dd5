/**
 * Settings of parallel dispatch (spec "Limits": the parallel dispatch rows): the
 * `MACHINE_PARALLEL_DISPATCH_*` entries of the one environment schema (runtime/environment.ts),
 * as the engine uses them. They apply to region jobs (and the region watchdog) only: child,
 * completion, timeout and send jobs keep `MACHINE_JOB_*` and `MACHINE_LOCK_*`.
 *
 * | Setting | Environment | Default |
 * |---|---|---|
 * | `enabled` | `MACHINE_PARALLEL_DISPATCH_ENABLED` (`true`/`false`/`1`/`0`) | false |
 * | `queue` | `MACHINE_PARALLEL_DISPATCH_QUEUE` | none (`null`) |
 * | `lockTimeout` (s) | `MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT` | 30 |
 * | `lockTtl` (s) | `MACHINE_PARALLEL_DISPATCH_LOCK_TTL` | 60 |
 * | `jobTimeout` (s) | `MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT` | 300 |
 * | `jobTries` | `MACHINE_PARALLEL_DISPATCH_JOB_TRIES` | 3 |
 * | `jobBackoff` (s) | `MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF` | 30 |
 * | `regionTimeout` (s, 0 = off) | `MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT` | 0 |
 */
import type { MacrostepOptions } from '../interpreter/types.js';
import {
  checkOptions,
  ENVIRONMENT_SETTINGS,
  parseEnvironment,
  throwIfProblems,
  type Environment,
  type SettingKey,
} from '../environment.js';

/** Validated parallel dispatch settings (durations in seconds). */
export interface ParallelDispatchSettings {
  /** Entering a parallel state runs each region's entry work as its own job. */
  enabled: boolean;
  /** Queue of region jobs (workers need the same setting); `null`: the region job's own name. */
  queue: string | null;
  /** Seconds a region job waits for the instance lock before its attempt fails. */
  lockTimeout: number;
  /** Seconds a region job's lock lives before another process may take it over. */
  lockTtl: number;
  /** Seconds an attempt of a region job may run before it is presumed dead and run again. */
  jobTimeout: number;
  /** Attempts of a region job. */
  jobTries: number;
  /** Seconds before a region job's second attempt (doubled per further attempt). */
  jobBackoff: number;
  /** Seconds a parallel state may wait for its region jobs before it fails; 0 = no watchdog. */
  regionTimeout: number;
}

const FROM_ENV: Record<keyof ParallelDispatchSettings, SettingKey> = {
  enabled: 'parallelDispatchEnabled',
  queue: 'parallelDispatchQueue',
  lockTimeout: 'parallelDispatchLockTimeout',
  lockTtl: 'parallelDispatchLockTtl',
  jobTimeout: 'parallelDispatchJobTimeout',
  jobTries: 'parallelDispatchJobTries',
  jobBackoff: 'parallelDispatchJobBackoff',
  regionTimeout: 'parallelDispatchRegionTimeout',
};

const KEYS = Object.keys(FROM_ENV) as (keyof ParallelDispatchSettings)[];

function fromValues(values: Record<SettingKey, unknown>): ParallelDispatchSettings {
  const settings = {} as Record<keyof ParallelDispatchSettings, unknown>;
  for (const key of KEYS) settings[key] = values[FROM_ENV[key]];
  // The schema's empty queue name means none.
  if (settings.queue === '') settings.queue = null;
  return settings as ParallelDispatchSettings;
}

/** The spec's defaults. */
export const DEFAULT_PARALLEL_DISPATCH: Readonly<ParallelDispatchSettings> = Object.freeze(
  fromValues(
    Object.fromEntries(
      (Object.keys(ENVIRONMENT_SETTINGS) as SettingKey[]).map((key) => [
        key,
        ENVIRONMENT_SETTINGS[key].default,
      ]),
    ) as Record<SettingKey, unknown>,
  ),
);

/**
 * Resolves the parallel dispatch settings: `overrides`, then `env`, then the defaults. Throws
 * `InvalidSettingsException` (`MR_INVALID_SETTINGS`) naming every malformed value and every
 * unknown `MACHINE_PARALLEL_DISPATCH_*` variable.
 */
export function loadParallelDispatchConfig(
  overrides: Partial<ParallelDispatchSettings> = {},
  env: Environment = process.env,
): ParallelDispatchSettings {
  const { values, problems } = parseEnvironment(env);
  const options: Partial<Record<SettingKey, unknown>> = {};
  for (const key of KEYS) {
    const value = overrides[key];
    if (value !== undefined)
      options[FROM_ENV[key]] = key === 'queue' && value === null ? '' : value;
  }
  throwIfProblems('parallel dispatch configuration', [...problems, ...checkOptions(options)]);
  return fromValues({ ...values, ...options } as Record<SettingKey, unknown>);
}

/** `MacrostepOptions.parallelDispatch` of a runtime's stored steps (`null` when off). */
export function regionStepOption(
  settings: Readonly<ParallelDispatchSettings>,
): MacrostepOptions['parallelDispatch'] {
  if (!settings.enabled) return null;
  return { regionTimeoutSeconds: settings.regionTimeout > 0 ? settings.regionTimeout : null };
}
