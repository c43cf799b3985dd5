/**
 * Defaults of the durable job queues: explicit options, then environment variables, then
 * defaults. The variables and what they accept are in one schema, runtime/environment.ts; the
 * environment gives times in seconds, the settings hold milliseconds.
 *
 * | Setting | Environment | Default |
 * |---|---|---|
 * | `maxAttempts` | `MACHINE_JOB_TRIES` | 3 |
 * | `backoffMs` | `MACHINE_JOB_BACKOFF` (seconds) | 30 s |
 * | `timeoutMs` | `MACHINE_JOB_TIMEOUT` (seconds) | 300 s |
 * | `concurrency` | `MACHINE_JOB_CONCURRENCY` | 4 |
 * | `pollIntervalMs` | `MACHINE_JOB_POLL_INTERVAL` (seconds) | 1 s |
 *
 * These are the settings of child, completion, timeout and send jobs. Parallel region jobs have
 * their own (`MACHINE_PARALLEL_DISPATCH_JOB_*`), given per job (`DurableJobRequest`).
 */
import type { SettingProblem } from '../errors.js';
import {
  ENVIRONMENT_SETTINGS,
  parseEnvironment,
  throwIfProblems,
  type Environment,
  type SettingKey,
} from '../environment.js';
import type { JobQueueSettings } from './types.js';

/** Each queue setting's environment setting, and the factor from its unit to the setting's. */
const FROM_ENV: Record<keyof JobQueueSettings, { key: SettingKey; scale: number }> = {
  maxAttempts: { key: 'jobTries', scale: 1 },
  backoffMs: { key: 'jobBackoff', scale: 1000 },
  timeoutMs: { key: 'jobTimeout', scale: 1000 },
  concurrency: { key: 'jobConcurrency', scale: 1 },
  pollIntervalMs: { key: 'jobPollInterval', scale: 1000 },
};

/** Defaults of every setting. */
export const DEFAULT_JOB_QUEUE_SETTINGS: Readonly<JobQueueSettings> = Object.freeze(
  Object.fromEntries(
    Object.entries(FROM_ENV).map(([name, { key, scale }]) => [
      name,
      (ENVIRONMENT_SETTINGS[key].default as number) * scale,
    ]),
  ),
) as Readonly<JobQueueSettings>;

/** What an option in code accepts (milliseconds where the environment takes seconds). */
function optionProblem(name: keyof JobQueueSettings, value: number): SettingProblem | undefined {
  const { key } = FROM_ENV[name];
  const integer = key === 'jobTries' || key === 'jobConcurrency';
  const min = key === 'jobBackoff' ? 0 : 1;
  if (Number.isFinite(value) && value >= min && (!integer || Number.isInteger(value)))
    return undefined;
  const expected = integer ? 'an integer >= 1' : min === 0 ? 'a number >= 0' : 'a number >= 1';
  return {
    source: `option '${name}'`,
    value,
    expected,
    message: `option '${name}' is ${JSON.stringify(value)}; expected ${expected}.`,
  };
}

/**
 * Resolves the queue settings. Throws `InvalidSettingsException` (`MR_INVALID_SETTINGS`) naming
 * every bad value at once, every `MACHINE_*` variable included.
 */
export function loadJobQueueConfig(
  overrides: Partial<JobQueueSettings> = {},
  env: Environment = process.env,
): JobQueueSettings {
  const { values, problems } = parseEnvironment(env);
  const settings = {} as JobQueueSettings;
  for (const name of Object.keys(FROM_ENV) as (keyof JobQueueSettings)[]) {
    const override = overrides[name];
    if (override !== undefined) {
      const problem = optionProblem(name, override);
      if (problem !== undefined) problems.push(problem);
      settings[name] = override;
      continue;
    }
    const { key, scale } = FROM_ENV[name];
    settings[name] = (values[key] as number) * scale;
  }
  throwIfProblems('job queue configuration', problems);
  return settings;
}
