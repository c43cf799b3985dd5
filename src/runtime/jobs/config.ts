/**
 * Defaults of the durable job queues: explicit options, then environment variables, then
 * defaults. The `MACHINE_PARALLEL_DISPATCH_JOB_*` names are the spec's (its units are not stated;
 * here they are seconds); the short names are aliases, and setting both to different values is
 * an error, as in `loadRuntimeConfig`.
 *
 * | Setting | Environment | Default |
 * |---|---|---|
 * | `maxAttempts` | `MACHINE_JOB_TRIES` or `MACHINE_PARALLEL_DISPATCH_JOB_TRIES` | 3 |
 * | `backoffMs` | `MACHINE_JOB_BACKOFF` or `MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF` (seconds) | 30 s |
 * | `timeoutMs` | `MACHINE_JOB_TIMEOUT` or `MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT` (seconds) | 300 s |
 * | `concurrency` | `MACHINE_JOB_CONCURRENCY` | 4 |
 * | `pollIntervalMs` | `MACHINE_JOB_POLL_INTERVAL` (seconds) | 1 s |
 */
import { InvalidConfigFileException } from '../errors.js';
import type { JobQueueSettings } from './types.js';
import { readEnvSetting } from '../env-setting.js';

/** Defaults of every setting. */
export const DEFAULT_JOB_QUEUE_SETTINGS: Readonly<JobQueueSettings> = Object.freeze({
  maxAttempts: 3,
  backoffMs: 30_000,
  timeoutMs: 300_000,
  concurrency: 4,
  pollIntervalMs: 1000,
});

interface SettingRule {
  env: readonly string[];
  /** Environment values are in this unit; settings in ms are multiplied by it. */
  scale: number;
  integer: boolean;
  min: number;
}

const RULES: Record<keyof JobQueueSettings, SettingRule> = {
  maxAttempts: {
    env: ['MACHINE_JOB_TRIES', 'MACHINE_PARALLEL_DISPATCH_JOB_TRIES'],
    scale: 1,
    integer: true,
    min: 1,
  },
  backoffMs: {
    env: ['MACHINE_JOB_BACKOFF', 'MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF'],
    scale: 1000,
    integer: false,
    min: 0,
  },
  timeoutMs: {
    env: ['MACHINE_JOB_TIMEOUT', 'MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT'],
    scale: 1000,
    integer: false,
    min: 1,
  },
  concurrency: { env: ['MACHINE_JOB_CONCURRENCY'], scale: 1, integer: true, min: 1 },
  pollIntervalMs: { env: ['MACHINE_JOB_POLL_INTERVAL'], scale: 1000, integer: false, min: 1 },
};

/**
 * Resolves the queue settings. Throws `InvalidConfigFileException` naming every bad value and
 * where it came from.
 */
export function loadJobQueueConfig(
  overrides: Partial<JobQueueSettings> = {},
  env: Record<string, string | undefined> = process.env,
): JobQueueSettings {
  const problems: string[] = [];
  const settings = { ...DEFAULT_JOB_QUEUE_SETTINGS };
  for (const key of Object.keys(RULES) as (keyof JobQueueSettings)[]) {
    const rule = RULES[key];
    let value: number;
    let origin: string;
    let raw: unknown;
    const override = overrides[key];
    if (override !== undefined) {
      value = override;
      raw = override;
      origin = `option '${key}'`;
    } else {
      const setting = readEnvSetting(rule.env, env);
      if (setting.kind === 'conflict') {
        problems.push(setting.problem);
        continue;
      }
      if (setting.kind === 'unset') continue;
      raw = setting.value;
      origin = `environment variable ${setting.name} (${rule.scale === 1000 ? 'seconds' : 'a count'})`;
      value = Number(raw) * rule.scale;
    }
    const ok =
      Number.isFinite(value) && value >= rule.min && (!rule.integer || Number.isInteger(value));
    if (!ok) {
      const kind = rule.integer
        ? 'an integer >= 1'
        : rule.min === 0
          ? 'a number >= 0'
          : 'a positive number';
      problems.push(`${origin}: expected ${kind}, got ${JSON.stringify(raw)}.`);
      continue;
    }
    settings[key] = value;
  }
  if (problems.length > 0) {
    throw new InvalidConfigFileException(
      `Invalid job queue configuration:\n  ${problems.join('\n  ')}`,
      {
        problems,
      },
    );
  }
  return settings;
}
