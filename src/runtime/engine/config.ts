/**
 * Runtime configuration: explicit overrides, then environment variables, then defaults.
 *
 * | Setting | Environment | Default |
 * |---|---|---|
 * | `databaseUrl` | `MACHINE_DATABASE_URL` | `sqlite:./data/machines.db` |
 * | `lockTtl` (seconds) | `MACHINE_LOCK_TTL` or `MACHINE_PARALLEL_DISPATCH_LOCK_TTL` | 60 |
 * | `lockTimeout` (seconds) | `MACHINE_LOCK_TIMEOUT` or `MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT` | 30 |
 * | `maxTransitionDepth` | `MACHINE_MAX_TRANSITION_DEPTH` | 100 |
 * | `scenariosEnabled` | `MACHINE_SCENARIOS_ENABLED` (`true`/`false`/`1`/`0`) | false |
 *
 * The `MACHINE_PARALLEL_DISPATCH_` names are the spec's; the short names are aliases. Setting
 * both to different values is an error rather than a silent precedence rule.
 */
import { z } from 'zod';
import { InvalidConfigFileException } from '../errors.js';
import { parseStoreUrl } from '../persistence/open-store.js';
import { readEnvSetting } from '../env-setting.js';

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
}

/** Defaults of every setting. */
export const DEFAULT_RUNTIME_CONFIG: Readonly<MachineRuntimeConfig> = Object.freeze({
  databaseUrl: 'sqlite:./data/machines.db',
  lockTtl: 60,
  lockTimeout: 30,
  maxTransitionDepth: 100,
  scenariosEnabled: false,
});

const ENV_NAMES: Record<keyof MachineRuntimeConfig, readonly string[]> = {
  databaseUrl: ['MACHINE_DATABASE_URL'],
  lockTtl: ['MACHINE_LOCK_TTL', 'MACHINE_PARALLEL_DISPATCH_LOCK_TTL'],
  lockTimeout: ['MACHINE_LOCK_TIMEOUT', 'MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT'],
  maxTransitionDepth: ['MACHINE_MAX_TRANSITION_DEPTH'],
  scenariosEnabled: ['MACHINE_SCENARIOS_ENABLED'],
};

const schema = z.object({
  databaseUrl: z.string().superRefine((url, ctx) => {
    try {
      parseStoreUrl(url);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  }),
  lockTtl: z.coerce.number().positive(),
  lockTimeout: z.coerce.number().min(0),
  maxTransitionDepth: z.coerce.number().int().positive(),
  scenariosEnabled: z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], {
      error: 'must be true, false, 1 or 0',
    })
    .transform((value) => value === true || value === 'true' || value === '1'),
});

/**
 * Builds the runtime configuration. `overrides` win over `env`, which wins over the defaults.
 * Throws `InvalidConfigFileException` naming every bad setting and where it came from.
 */
export function loadRuntimeConfig(
  overrides: Partial<MachineRuntimeConfig> = {},
  env: Record<string, string | undefined> = process.env,
): MachineRuntimeConfig {
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const key of Object.keys(ENV_NAMES) as (keyof MachineRuntimeConfig)[]) {
    if (overrides[key] !== undefined) {
      raw[key] = overrides[key];
      origin[key] = `option '${key}'`;
      continue;
    }
    const setting = readEnvSetting(ENV_NAMES[key], env);
    if (setting.kind === 'conflict') {
      problems.push(setting.problem);
      continue;
    }
    if (setting.kind === 'set') {
      raw[key] = setting.value;
      origin[key] = `environment variable ${setting.name}`;
    } else {
      raw[key] = DEFAULT_RUNTIME_CONFIG[key];
      origin[key] = 'default';
    }
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0]);
      problems.push(`${origin[key] ?? key}: ${issue.message} (got ${JSON.stringify(raw[key])}).`);
    }
  }
  if (problems.length > 0 || !parsed.success) {
    throw new InvalidConfigFileException(
      `Invalid runtime configuration:\n  ${problems.join('\n  ')}`,
      {
        problems,
      },
    );
  }
  return parsed.data;
}
