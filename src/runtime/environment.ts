/**
 * Every environment setting of the runtime, in one zod schema: one place that says which
 * variables exist, what each accepts and its default, and one parse that reports every bad value
 * at once (`InvalidSettingsException`, `MR_INVALID_SETTINGS`) instead of failing on the first.
 *
 * | Setting | Environment | Accepts | Default |
 * |---|---|---|---|
 * | `databaseUrl` | `MACHINE_DATABASE_URL` | a store URL (store-url.ts) | `sqlite:./data/machines.db` |
 * | `lockTtl` | `MACHINE_LOCK_TTL` | seconds > 0 | 60 |
 * | `lockTimeout` | `MACHINE_LOCK_TIMEOUT` | seconds >= 0 | 30 |
 * | `maxTransitionDepth` | `MACHINE_MAX_TRANSITION_DEPTH` | integer >= 1 | 100 |
 * | `scenariosEnabled` | `MACHINE_SCENARIOS_ENABLED` | `true`/`false`/`1`/`0` | false |
 * | `traceBehaviors` | `MACHINE_TRACE_BEHAVIORS` | `true`/`false`/`1`/`0` | false |
 * | `traceSteps` | `MACHINE_TRACE_STEPS` | `true`/`false`/`1`/`0` | false |
 * | `timerTries` | `MACHINE_TIMER_TRIES` | integer >= 1 | 3 |
 * | `timerBackoff` | `MACHINE_TIMER_BACKOFF` | seconds >= 0 | 1 |
 * | `jobTries` | `MACHINE_JOB_TRIES` | integer >= 1 | 3 |
 * | `jobBackoff` | `MACHINE_JOB_BACKOFF` | seconds >= 0 | 30 |
 * | `jobTimeout` | `MACHINE_JOB_TIMEOUT` | seconds > 0 | 300 |
 * | `jobConcurrency` | `MACHINE_JOB_CONCURRENCY` | integer >= 1 | 4 |
 * | `jobPollInterval` | `MACHINE_JOB_POLL_INTERVAL` | seconds > 0 | 1 |
 * | `shutdownTimeout` | `MACHINE_SHUTDOWN_TIMEOUT` | seconds >= 0 | 10 |
 * | `historyRetentionDays` | `MACHINE_HISTORY_RETENTION_DAYS` | integer >= 0 (0 = keep all) | 0 |
 * | `historyRetentionArchive` | `MACHINE_HISTORY_RETENTION_ARCHIVE` | `true`/`false`/`1`/`0` | false |
 * | `parallelDispatchEnabled` | `MACHINE_PARALLEL_DISPATCH_ENABLED` | `true`/`false`/`1`/`0` | false |
 * | `parallelDispatchQueue` | `MACHINE_PARALLEL_DISPATCH_QUEUE` | a queue name (letters, digits, `_ . -`) | none |
 * | `parallelDispatchLockTimeout` | `MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT` | seconds >= 0 | 30 |
 * | `parallelDispatchLockTtl` | `MACHINE_PARALLEL_DISPATCH_LOCK_TTL` | seconds > 0 | 60 |
 * | `parallelDispatchJobTimeout` | `MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT` | seconds > 0 | 300 |
 * | `parallelDispatchJobTries` | `MACHINE_PARALLEL_DISPATCH_JOB_TRIES` | integer >= 1 | 3 |
 * | `parallelDispatchJobBackoff` | `MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF` | seconds >= 0 | 30 |
 * | `parallelDispatchRegionTimeout` | `MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT` | seconds >= 0 (0 = off) | 0 |
 * | `port` | `PORT` | integer 0..65535 | 3000 |
 * | `host` | `HOST` | a host name or address | `127.0.0.1` |
 *
 * The `MACHINE_PARALLEL_DISPATCH_` settings are the spec's (its units are not stated; here they
 * are seconds). They apply to parallel region jobs only, not aliases of the general lock and job
 * settings (docs/parallel-dispatch.md); a `MACHINE_PARALLEL_DISPATCH_` name not in this table is
 * a problem too (a misspelt name would otherwise be ignored). An empty (or blank) variable counts
 * as unset.
 */
import { z } from 'zod';
import { InvalidSettingsException, type SettingProblem } from './errors.js';
import {
  ACCEPTED_STORE_URLS,
  DEFAULT_STORE_URL,
  parseStoreUrl,
  redactStoreUrl,
} from './store-url.js';

/** One setting: its variables (first the short name, then aliases), what it accepts, default. */
interface SettingSpec<T> {
  env: readonly string[];
  /** What is accepted, for messages ("a number of seconds > 0"). */
  expected: string;
  /** Parses the variable's text, and also checks a value passed as an option in code. */
  schema: z.ZodType<T>;
  default: T;
  /** Hides secrets of a value in messages. */
  show?: (value: unknown) => unknown;
}

// An environment value is text; options in code are already typed. The preprocessors turn text
// into the typed value (or leave it as is, so the typed schema rejects it with the value named).
const asNumber = (value: unknown): unknown =>
  typeof value === 'string' && /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(value.trim())
    ? Number(value)
    : value;
const asBoolean = (value: unknown): unknown => {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return value;
};

/**
 * A setting whose schema is built on first use: a start parses only the variables that are set
 * (one or two), and building the two dozen zod schemas up front cost every start a few ms.
 */
function setting<T>(
  env: readonly string[],
  expected: string,
  fallback: T,
  build: () => z.ZodType<T>,
  show?: (value: unknown) => unknown,
): SettingSpec<T> {
  let schema: z.ZodType<T> | undefined;
  return {
    env,
    expected,
    get schema() {
      return (schema ??= build());
    },
    default: fallback,
    ...(show === undefined ? {} : { show }),
  };
}

function seconds(
  env: readonly string[],
  min: 'positive' | 'nonnegative',
  fallback: number,
): SettingSpec<number> {
  return setting(
    env,
    min === 'positive' ? 'a number of seconds > 0' : 'a number of seconds >= 0',
    fallback,
    () => {
      const base = z.number().refine(Number.isFinite);
      return z.preprocess(asNumber, min === 'positive' ? base.positive() : base.min(0));
    },
  );
}

function count(
  env: readonly string[],
  min: number,
  fallback: number,
  max?: number,
): SettingSpec<number> {
  return setting(
    env,
    max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
    fallback,
    () => {
      let schema = z.number().int().min(min);
      if (max !== undefined) schema = schema.max(max);
      return z.preprocess(asNumber, schema);
    },
  );
}

function flag(env: readonly string[], fallback: boolean): SettingSpec<boolean> {
  return setting(env, 'true, false, 1 or 0', fallback, () => z.preprocess(asBoolean, z.boolean()));
}

/**
 * The settings, by area. A new setting is one entry here (and a row in the table above); its
 * type, default, parsing and messages follow.
 */
export const ENVIRONMENT_SETTINGS = {
  // Store.
  databaseUrl: setting(
    ['MACHINE_DATABASE_URL'],
    ACCEPTED_STORE_URLS,
    DEFAULT_STORE_URL,
    () =>
      z.string().superRefine((url, ctx) => {
        try {
          parseStoreUrl(url);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
        }
      }),
    (value: unknown) => (typeof value === 'string' ? redactStoreUrl(value) : value),
  ),

  // Locks of the engine (one lock per root instance while a step runs).
  lockTtl: seconds(['MACHINE_LOCK_TTL'], 'positive', 60),
  lockTimeout: seconds(['MACHINE_LOCK_TIMEOUT'], 'nonnegative', 30),

  // Engine.
  maxTransitionDepth: count(['MACHINE_MAX_TRANSITION_DEPTH'], 1, 100),
  scenariosEnabled: flag(['MACHINE_SCENARIOS_ENABLED'], false),
  // Telemetry: a span per guard, action, calculator and listener call (docs/operating.md).
  traceBehaviors: flag(['MACHINE_TRACE_BEHAVIORS'], false),
  // Telemetry: every step's transition and commit in spans of their own (docs/operating.md).
  traceSteps: flag(['MACHINE_TRACE_STEPS'], false),

  // Timer fires (engine/timers/timer-failures.ts): a fire whose behavior throws is tried this
  // many times, the wait before each retry doubling from timerBackoff, then given up (recorded).
  timerTries: count(['MACHINE_TIMER_TRIES'], 1, 3),
  timerBackoff: seconds(['MACHINE_TIMER_BACKOFF'], 'nonnegative', 1),

  // Durable job queues (jobs/config.ts turns the seconds into milliseconds).
  jobTries: count(['MACHINE_JOB_TRIES'], 1, 3),
  jobBackoff: seconds(['MACHINE_JOB_BACKOFF'], 'nonnegative', 30),
  jobTimeout: seconds(['MACHINE_JOB_TIMEOUT'], 'positive', 300),
  jobConcurrency: count(['MACHINE_JOB_CONCURRENCY'], 1, 4),
  jobPollInterval: seconds(['MACHINE_JOB_POLL_INTERVAL'], 'positive', 1),

  // Shutdown (SIGTERM, `runtime.close()`): how long requests in flight and running jobs may take
  // to finish before they are cut (docs/operating.md "Shutdown").
  shutdownTimeout: seconds(['MACHINE_SHUTDOWN_TIMEOUT'], 'nonnegative', 10),

  // History retention (engine/history-retention.ts): workers delete the history of instances
  // finished more than this many days ago; 0 keeps every record.
  historyRetentionDays: count(['MACHINE_HISTORY_RETENTION_DAYS'], 0, 0),
  // ...moving them into machine_events_archive (migration 22) instead of only deleting them.
  historyRetentionArchive: flag(['MACHINE_HISTORY_RETENTION_ARCHIVE'], false),

  // Parallel dispatch (spec: "Parallel dispatch settings", prefix MACHINE_PARALLEL_DISPATCH_):
  // region jobs' own settings; child and send jobs keep the ones above
  // (engine/parallel-dispatch-config.ts).
  parallelDispatchEnabled: flag(['MACHINE_PARALLEL_DISPATCH_ENABLED'], false),
  parallelDispatchQueue: setting(
    ['MACHINE_PARALLEL_DISPATCH_QUEUE'],
    'a queue name of letters, digits, _ . - (empty: none)',
    '',
    () => z.string().regex(/^[A-Za-z0-9_.-]*$/),
  ),
  parallelDispatchLockTimeout: seconds(
    ['MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT'],
    'nonnegative',
    30,
  ),
  parallelDispatchLockTtl: seconds(['MACHINE_PARALLEL_DISPATCH_LOCK_TTL'], 'positive', 60),
  parallelDispatchJobTimeout: seconds(['MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT'], 'positive', 300),
  parallelDispatchJobTries: count(['MACHINE_PARALLEL_DISPATCH_JOB_TRIES'], 1, 3),
  parallelDispatchJobBackoff: seconds(['MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF'], 'nonnegative', 30),
  parallelDispatchRegionTimeout: seconds(
    ['MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT'],
    'nonnegative',
    0,
  ),

  // The HTTP server a generated app starts (server.gen.ts).
  port: count(['PORT'], 0, 3000, 65535),
  host: setting(['HOST'], 'a host name or address', '127.0.0.1', () => z.string().min(1)),
} as const;

type Settings = typeof ENVIRONMENT_SETTINGS;
/** The name of a setting. */
export type SettingKey = keyof Settings;
/** Every setting, resolved: environment over defaults. */
export type EnvironmentSettings = {
  [K in SettingKey]: Settings[K]['default'] extends boolean
    ? boolean
    : Settings[K]['default'] extends number
      ? number
      : string;
};

/** Environment variables, as `process.env` holds them. */
export type Environment = Record<string, string | undefined>;

/**
 * The environment a runtime reads its settings from: `env`'s variables over `process.env`'s
 * (`base`). A variable `env` leaves out, or sets blank, is read from `base` (blank counts as
 * unset, as everywhere); without `env`, `base` alone. So `open({ env: { MACHINE_JOB_TRIES: '7' } })`
 * still sees the `MACHINE_DATABASE_URL` of the process, and options given in code win over both
 * (`resolveSettings`, engine/config.ts).
 */
export function layeredEnvironment(
  env: Environment | undefined,
  base: Environment = process.env,
): Environment {
  if (env === undefined || env === base) return base;
  const layered: Environment = { ...base };
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && value.trim() !== '') layered[name] = value;
  return layered;
}

/** The values of every setting, and every problem found: all variables are read in one pass. */
export interface ParsedEnvironment {
  values: EnvironmentSettings;
  /** Where each value came from: the variable's name, or `default`. */
  sources: Record<SettingKey, string>;
  problems: SettingProblem[];
}

function describe(source: string, shown: unknown, expected: string): SettingProblem {
  return {
    source,
    value: shown,
    expected,
    message: `${source} is ${JSON.stringify(shown)}; expected ${expected}.`,
  };
}

/**
 * Reads every setting from `env`, each set variable through its setting's schema. Never throws:
 * bad values come back in `problems` (and their settings keep the default), so callers can add
 * their own and report all.
 */
export function parseEnvironment(env: Environment = process.env): ParsedEnvironment {
  const input: Record<string, string> = {};
  const sources = {} as Record<SettingKey, string>;
  const problems: SettingProblem[] = [];
  const keys = Object.keys(ENVIRONMENT_SETTINGS) as SettingKey[];
  problems.push(...unknownNames(env, keys));
  for (const key of keys) {
    const spec: SettingSpec<unknown> = ENVIRONMENT_SETTINGS[key];
    const set = spec.env.filter((name) => (env[name] ?? '').trim() !== '');
    sources[key] = 'default';
    if (set.length === 0) continue;
    const values = set.map((name) => env[name]!.trim());
    if (new Set(values).size > 1) {
      const given = set.map(
        (name, i) => `${name}=${JSON.stringify(spec.show?.(values[i]) ?? values[i])}`,
      );
      problems.push({
        source: set.join(' and '),
        expected: `one value: set only one of ${set.join(', ')}`,
        message: `${given.join(' and ')} are both set, to different values; set only one.`,
      });
      continue;
    }
    input[key] = values[0]!;
    sources[key] = set[0]!;
  }
  // Only the variables that are set, each with its own schema, in the table's order: an object
  // schema of every setting cost its compilation (about 3 ms) at each start, for a start that
  // sets one or two of them.
  const parsed: Partial<Record<SettingKey, unknown>> = {};
  const bad = new Set<SettingKey>();
  for (const key of keys) {
    if (input[key] === undefined) continue;
    const result = (ENVIRONMENT_SETTINGS[key].schema as z.ZodType).safeParse(input[key]);
    if (result.success) {
      parsed[key] = result.data;
      continue;
    }
    bad.add(key);
    const spec: SettingSpec<unknown> = ENVIRONMENT_SETTINGS[key];
    problems.push(describe(sources[key], spec.show?.(input[key]) ?? input[key], spec.expected));
  }
  const values = Object.fromEntries(
    keys.map((key) => [
      key,
      parsed[key] !== undefined ? parsed[key] : ENVIRONMENT_SETTINGS[key].default,
    ]),
  ) as EnvironmentSettings;
  for (const key of bad) sources[key] = 'default';
  return { values, sources, problems };
}

// Prefixes whose every variable is in the table: a name under them that is not is a typo.
const CLOSED_PREFIXES = ['MACHINE_PARALLEL_DISPATCH_'] as const;

function unknownNames(env: Environment, keys: readonly SettingKey[]): SettingProblem[] {
  const known = new Set(keys.flatMap((key) => ENVIRONMENT_SETTINGS[key].env));
  const problems: SettingProblem[] = [];
  for (const prefix of CLOSED_PREFIXES) {
    const names = [...known].filter((name) => name.startsWith(prefix));
    for (const name of Object.keys(env).sort()) {
      if (!name.startsWith(prefix) || known.has(name) || (env[name] ?? '').trim() === '') continue;
      const expected = `one of ${names.join(', ')}`;
      problems.push({
        source: name,
        value: env[name],
        expected,
        message: `${name} is not a setting; expected ${expected}.`,
      });
    }
  }
  return problems;
}

/**
 * Checks values passed as options in code with the same schema the environment goes through;
 * problems name `option 'key'`.
 */
export function checkOptions(options: Partial<Record<SettingKey, unknown>>): SettingProblem[] {
  const problems: SettingProblem[] = [];
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || !(key in ENVIRONMENT_SETTINGS)) continue;
    const spec: SettingSpec<unknown> = ENVIRONMENT_SETTINGS[key as SettingKey];
    // A default is valid: settings resolved once and passed on (the engine's parallel dispatch
    // settings at every start) are checked without building their zod schemas.
    if (Object.is(value, spec.default)) continue;
    // Options are typed values: text that would parse as a number is still not a number here.
    if (typeof value === 'string' && typeof spec.default !== 'string') {
      problems.push(describe(`option '${key}'`, value, spec.expected));
      continue;
    }
    if (!spec.schema.safeParse(value).success) {
      problems.push(describe(`option '${key}'`, spec.show?.(value) ?? value, spec.expected));
    }
  }
  return problems;
}

/** Throws `InvalidSettingsException` listing every problem, when there is any. */
export function throwIfProblems(what: string, problems: readonly SettingProblem[]): void {
  if (problems.length === 0) return;
  throw new InvalidSettingsException(
    `Invalid ${what}:\n  ${problems.map((problem) => problem.message).join('\n  ')}`,
    { problems: [...problems] },
  );
}

/**
 * Every setting from the environment, defaults filled in. Throws `InvalidSettingsException`
 * (`MR_INVALID_SETTINGS`) naming every bad variable, its value and what it accepts.
 */
export function readEnvironment(env: Environment = process.env): EnvironmentSettings {
  const { values, problems } = parseEnvironment(env);
  throwIfProblems('environment', problems);
  return values;
}
