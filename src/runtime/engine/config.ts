/**
 * Runtime configuration: explicit overrides, then environment variables, then defaults. The
 * variables, what they accept and their defaults are in one schema, runtime/environment.ts.
 *
 * | Setting | Environment | Default |
 * |---|---|---|
 * | `databaseUrl` | `MACHINE_DATABASE_URL` | `sqlite:./data/machines.db` |
 * | `lockTtl` (seconds) | `MACHINE_LOCK_TTL` | 60 |
 * | `lockTimeout` (seconds) | `MACHINE_LOCK_TIMEOUT` | 30 |
 * | `maxTransitionDepth` | `MACHINE_MAX_TRANSITION_DEPTH` | 100 |
 * | `scenariosEnabled` | `MACHINE_SCENARIOS_ENABLED` (`true`/`false`/`1`/`0`) | false |
 * | `traceBehaviors` | `MACHINE_TRACE_BEHAVIORS` (`true`/`false`/`1`/`0`) | false |
 * | `traceSteps` | `MACHINE_TRACE_STEPS` (`true`/`false`/`1`/`0`) | false |
 * | `timerTries` | `MACHINE_TIMER_TRIES` | 3 |
 * | `timerBackoff` (seconds) | `MACHINE_TIMER_BACKOFF` | 1 |
 * | `shutdownTimeout` (seconds) | `MACHINE_SHUTDOWN_TIMEOUT` | 10 |
 * | `historyRetentionDays` | `MACHINE_HISTORY_RETENTION_DAYS` (0 = keep all) | 0 |
 * | `historyRetentionArchive` | `MACHINE_HISTORY_RETENTION_ARCHIVE` (`true`/`false`/`1`/`0`) | false |
 *
 * The spec's `MACHINE_PARALLEL_DISPATCH_LOCK_*` are not aliases of these: they are region jobs'
 * own (engine/parallel-dispatch-config.ts).
 */
import { loadJobQueueConfig } from '../jobs/config.js';
import type { JobQueueSettings } from '../jobs/types.js';
import {
  checkOptions,
  ENVIRONMENT_SETTINGS,
  layeredEnvironment,
  parseEnvironment,
  throwIfProblems,
  type Environment,
} from '../environment.js';
import {
  loadParallelDispatchConfig,
  type ParallelDispatchSettings,
} from './parallel-dispatch-config.js';

/** Validated runtime settings. */
export interface MachineRuntimeConfig {
  /** Store URL: `sqlite:<file>`, `sqlite::memory:`, `memory:`, `postgres://...`. */
  databaseUrl: string;
  /** Seconds a lock lives before another process may take it over (the holder is presumed dead). */
  lockTtl: number;
  /** Seconds a waiting acquire (`withLock`) tries before giving up. */
  lockTimeout: number;
  /** Default protection from `@always` / raise loops while processing one event. */
  maxTransitionDepth: number;
  /**
   * Requests may play scenarios (`scenario`, `scenarioParams`) and responses list them
   * (docs/scenarios.md). Off by default: scenarios are for tests and demos.
   */
  scenariosEnabled: boolean;
  /** A span per guard, action, calculator and listener call (docs/operating.md). */
  traceBehaviors: boolean;
  /**
   * Every step's transition and commit in spans of their own; otherwise the first step under a
   * request, job or timer span is recorded on that span (docs/operating.md).
   */
  traceSteps: boolean;
  /** Attempts at a timer fire whose behavior throws before it is given up and recorded. */
  timerTries: number;
  /** Seconds before a failed timer fire's first retry, doubled at each further one. */
  timerBackoff: number;
  /**
   * Seconds a shutdown waits for requests in flight and running jobs before cutting them: the
   * generated server's SIGTERM drain, and `close()`'s default job wait.
   */
  shutdownTimeout: number;
  /**
   * Days a finished instance keeps its history: workers delete the history of instances that
   * finished longer ago (docs/operations.md "History retention"). 0 (default) keeps everything.
   */
  historyRetentionDays: number;
  /**
   * The retention moves the records into `machine_events_archive` instead of only deleting them
   * (docs/operations.md "Archiving"). Off by default.
   */
  historyRetentionArchive: boolean;
}

const KEYS = [
  'databaseUrl',
  'lockTtl',
  'lockTimeout',
  'maxTransitionDepth',
  'scenariosEnabled',
  'traceBehaviors',
  'traceSteps',
  'timerTries',
  'timerBackoff',
  'shutdownTimeout',
  'historyRetentionDays',
  'historyRetentionArchive',
] as const satisfies readonly (keyof MachineRuntimeConfig)[];

/** Defaults of every setting. */
export const DEFAULT_RUNTIME_CONFIG: Readonly<MachineRuntimeConfig> = Object.freeze(
  Object.fromEntries(KEYS.map((key) => [key, ENVIRONMENT_SETTINGS[key].default])),
) as Readonly<MachineRuntimeConfig>;

/**
 * Builds the runtime configuration. `overrides` win over `env`, which wins over the defaults.
 * Throws `InvalidSettingsException` (`MR_INVALID_SETTINGS`) naming every bad value at once,
 * every `MACHINE_*` variable included (not only this function's), so one start-up shows them all.
 */
export function loadRuntimeConfig(
  overrides: Partial<MachineRuntimeConfig> = {},
  env: Environment = process.env,
): MachineRuntimeConfig {
  const { values, problems } = parseEnvironment(env);
  throwIfProblems('runtime configuration', [...problems, ...checkOptions(overrides)]);
  const config = {} as Record<keyof MachineRuntimeConfig, unknown>;
  for (const key of KEYS) config[key] = overrides[key] ?? values[key];
  return config as MachineRuntimeConfig;
}

/** Where `resolveSettings` reads: options given in code, and the environment. */
export interface SettingsSource extends Partial<MachineRuntimeConfig> {
  /**
   * Environment variables over `process.env`'s (`layeredEnvironment`): a variable set here wins,
   * one left out is read from `process.env`.
   */
  env?: Environment | undefined;
  /** Job queue settings given in code (milliseconds where the environment takes seconds). */
  jobQueue?: Partial<JobQueueSettings> | undefined;
  /** Parallel dispatch settings given in code. */
  parallelDispatch?: Partial<ParallelDispatchSettings> | undefined;
}

/** Every setting a runtime opened from settings runs with. */
export interface ResolvedSettings {
  runtime: MachineRuntimeConfig;
  jobQueue: JobQueueSettings;
  parallelDispatch: ParallelDispatchSettings;
}

/**
 * Resolves every setting of `open`: options given in code over `env` over `process.env` over
 * the defaults, each setting on its own (a variable `env` leaves out is read from `process.env`).
 * Throws `InvalidSettingsException` naming every bad value.
 */
export function resolveSettings(options: SettingsSource = {}): ResolvedSettings {
  const env = layeredEnvironment(options.env);
  const { databaseUrl, lockTtl, lockTimeout, maxTransitionDepth, scenariosEnabled } = options;
  const { timerTries, timerBackoff, shutdownTimeout, traceBehaviors, traceSteps } = options;
  const { historyRetentionDays, historyRetentionArchive } = options;
  return {
    runtime: loadRuntimeConfig(
      {
        databaseUrl,
        lockTtl,
        lockTimeout,
        maxTransitionDepth,
        scenariosEnabled,
        traceBehaviors,
        traceSteps,
        timerTries,
        timerBackoff,
        shutdownTimeout,
        historyRetentionDays,
        historyRetentionArchive,
      },
      env,
    ),
    jobQueue: loadJobQueueConfig(options.jobQueue, env),
    parallelDispatch: loadParallelDispatchConfig(options.parallelDispatch, env),
  };
}
