/**
 * Every `MACHINE_*` setting of the one schema (runtime/environment.ts) means the same whichever
 * way a runtime is started: `MachineRuntime.open({ env })`, the generated server's `buildApp`,
 * `machine-routes worker` and `machine-routes timers` (the options each opens its runtime with),
 * all through the one composition root. The test enumerates the schema: a new setting must get
 * a sample value here, and is then checked on every path against the runtime it produced.
 * And the job queue settings of `env` reach the jobs a step stores.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../../generated-example/app.gen.js';
import config from '../../../fixtures/example/machine-routes.config.js';
import { timersRuntimeOptions } from '../../../src/cli/commands/timers.js';
import { workerRuntimeOptions } from '../../../src/cli/commands/worker.js';
import type { LoadedConfig } from '../../../src/generator/load-config.js';
import {
  ENVIRONMENT_SETTINGS,
  MachineRuntime,
  parseEnvironment,
  SqliteStore,
  type OpenRuntimeOptions,
  type SettingKey,
} from '../../../src/runtime/index.js';
import { loanMachine } from '../delegation/fixtures/machines.js';

/** A value other than the default for every `MACHINE_*` setting (`{dir}`: the test's directory). */
const SAMPLES: Partial<Record<SettingKey, string>> = {
  databaseUrl: 'sqlite:{dir}/parity.db',
  lockTtl: '7',
  lockTimeout: '11',
  maxTransitionDepth: '42',
  scenariosEnabled: 'true',
  traceBehaviors: 'true',
  traceSteps: 'true',
  timerTries: '5',
  timerBackoff: '4',
  jobTries: '6',
  jobBackoff: '2',
  jobTimeout: '99',
  jobConcurrency: '3',
  jobPollInterval: '0.25',
  shutdownTimeout: '12',
  historyRetentionDays: '30',
  historyRetentionArchive: 'true',
  parallelDispatchEnabled: 'true',
  parallelDispatchQueue: 'regions',
  parallelDispatchLockTimeout: '5',
  parallelDispatchLockTtl: '9',
  parallelDispatchJobTimeout: '77',
  parallelDispatchJobTries: '4',
  parallelDispatchJobBackoff: '8',
  parallelDispatchRegionTimeout: '13',
};

const MACHINE_KEYS = (Object.keys(ENVIRONMENT_SETTINGS) as SettingKey[]).filter((key) =>
  ENVIRONMENT_SETTINGS[key].env.some((name) => name.startsWith('MACHINE_')),
);

/** What a running runtime uses for each setting, in the schema's unit. */
function inForce(runtime: MachineRuntime, key: SettingKey): unknown {
  const engine = runtime.context.settings;
  const opened = runtime.settings!;
  const parallel = engine.parallelDispatch;
  const values: Partial<Record<SettingKey, unknown>> = {
    databaseUrl: opened.runtime.databaseUrl,
    lockTtl: engine.lockTtlMs / 1000,
    lockTimeout: engine.lockTimeoutMs / 1000,
    maxTransitionDepth: runtime.context.macrostepOptions.maxTransitionDepth,
    scenariosEnabled: engine.scenariosEnabled,
    traceBehaviors: runtime.context.macrostepOptions.traceBehaviors === true,
    traceSteps: engine.traceSteps,
    timerTries: engine.timerTries,
    timerBackoff: engine.timerBackoffMs / 1000,
    jobTries: opened.jobQueue.maxAttempts,
    jobBackoff: opened.jobQueue.backoffMs / 1000,
    jobTimeout: opened.jobQueue.timeoutMs / 1000,
    jobConcurrency: opened.jobQueue.concurrency,
    jobPollInterval: opened.jobQueue.pollIntervalMs / 1000,
    shutdownTimeout: opened.runtime.shutdownTimeout,
    historyRetentionDays: opened.runtime.historyRetentionDays,
    historyRetentionArchive: opened.runtime.historyRetentionArchive,
    parallelDispatchEnabled: parallel.enabled,
    parallelDispatchQueue: parallel.queue,
    parallelDispatchLockTimeout: parallel.lockTimeout,
    parallelDispatchLockTtl: parallel.lockTtl,
    parallelDispatchJobTimeout: parallel.jobTimeout,
    parallelDispatchJobTries: parallel.jobTries,
    parallelDispatchJobBackoff: parallel.jobBackoff,
    parallelDispatchRegionTimeout: parallel.regionTimeout,
  };
  return values[key];
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mr-settings-parity-'));
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

/** The sample environment: every `MACHINE_*` setting set. */
function sampleEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of MACHINE_KEYS)
    env[ENVIRONMENT_SETTINGS[key].env[0]!] = SAMPLES[key]!.replace('{dir}', dir);
  return env;
}

/** `process.env` with the sample values (the server and the CLI read it). */
function stubProcessEnv(): void {
  for (const [name, value] of Object.entries(sampleEnv())) vi.stubEnv(name, value);
}

const loaded = { config } as unknown as LoadedConfig;

/** Each way of starting a runtime, as its entry point opens it. */
const PATHS: { name: string; open: () => Promise<MachineRuntime> }[] = [
  {
    name: 'MachineRuntime.open({ env })',
    open: () => MachineRuntime.open({ env: sampleEnv(), worker: false }),
  },
  {
    name: 'the generated server (buildApp)',
    open: async () => {
      stubProcessEnv();
      return (await buildApp({ worker: false })).runtime;
    },
  },
  {
    name: 'machine-routes worker',
    open: () => {
      stubProcessEnv();
      const options: OpenRuntimeOptions = workerRuntimeOptions(loaded.config, undefined, undefined);
      return MachineRuntime.open({ ...options, keepAlive: false });
    },
  },
  {
    name: 'machine-routes timers',
    open: () => {
      stubProcessEnv();
      return MachineRuntime.open({
        ...timersRuntimeOptions(loaded.config, {}, 500),
        keepAlive: false,
      });
    },
  },
];

describe('settings parity', () => {
  it('should have a sample value for every MACHINE_* setting of the schema', () => {
    expect(MACHINE_KEYS.length).toBeGreaterThan(15);
    expect(MACHINE_KEYS.filter((key) => SAMPLES[key] === undefined)).toEqual([]);
  });

  it.each(PATHS)('should apply every MACHINE_* setting the same way: $name', async (path) => {
    const expected = parseEnvironment(sampleEnv());
    expect(expected.problems).toEqual([]);
    const runtime = await path.open();
    try {
      for (const key of MACHINE_KEYS) {
        const value = expected.values[key];
        // The schema's empty queue name means none.
        const want = key === 'parallelDispatchQueue' && value === '' ? null : value;
        expect({ key, value: inForce(runtime, key) }).toEqual({ key, value: want });
      }
      // The store opened is the one MACHINE_DATABASE_URL names.
      expect((runtime.store as SqliteStore).database.name).toBe(join(dir, 'parity.db'));
    } finally {
      await runtime.close();
    }
  });
});

describe('MachineRuntime.open({ env }) job settings', () => {
  it('should store jobs with the attempts and backoff of env, not of process.env', async () => {
    vi.stubEnv('MACHINE_JOB_TRIES', '5');
    vi.stubEnv('MACHINE_JOB_BACKOFF', '9');
    const runtime = await MachineRuntime.open({
      databaseUrl: `sqlite:${dir}/jobs.db`,
      worker: false,
      env: { MACHINE_JOB_TRIES: '7', MACHINE_JOB_BACKOFF: '2' },
    });
    try {
      const { snapshot } = await runtime.create(loanMachine);
      // Enters a state with an asynchronous child: its start job is written with the commit.
      await runtime.send(loanMachine, snapshot.id, { type: 'APPLY' });
      const jobs = (runtime.store as SqliteStore).database
        .prepare('SELECT name, max_attempts, backoff_ms FROM machine_jobs')
        .all();
      expect(jobs).toEqual([
        { name: 'machine-routes.child.start', max_attempts: 7, backoff_ms: 2000 },
      ]);
    } finally {
      await runtime.close();
    }
  });
});

describe('MachineRuntime.open({ env }) layered over process.env', () => {
  it('should read a setting env leaves out from process.env, env over process.env, options over both', async () => {
    // Only in process.env: seen although `env` is given (with other keys).
    vi.stubEnv('MACHINE_LOCK_TTL', '7');
    vi.stubEnv('MACHINE_DATABASE_URL', `sqlite:${dir}/layered.db`);
    // In both: `env` wins.
    vi.stubEnv('MACHINE_LOCK_TIMEOUT', '11');
    vi.stubEnv('MACHINE_JOB_TRIES', '5');
    // In all three: the option in code wins.
    vi.stubEnv('MACHINE_MAX_TRANSITION_DEPTH', '40');
    const runtime = await MachineRuntime.open({
      worker: false,
      env: {
        MACHINE_LOCK_TIMEOUT: '4',
        MACHINE_JOB_TRIES: '8',
        MACHINE_MAX_TRANSITION_DEPTH: '41',
        // Blank counts as unset: process.env's value stays.
        MACHINE_JOB_BACKOFF: ' ',
      },
      maxTransitionDepth: 42,
    });
    try {
      expect((runtime.store as SqliteStore).database.name).toBe(join(dir, 'layered.db'));
      expect(runtime.context.settings.lockTtlMs).toBe(7000);
      expect(runtime.context.settings.lockTimeoutMs).toBe(4000);
      expect(runtime.settings!.jobQueue.maxAttempts).toBe(8);
      expect(runtime.settings!.jobQueue.backoffMs).toBe(30_000);
      expect(runtime.context.macrostepOptions.maxTransitionDepth).toBe(42);
      // The stored job carries the layered attempts.
      const { snapshot } = await runtime.create(loanMachine);
      await runtime.send(loanMachine, snapshot.id, { type: 'APPLY' });
      const jobs = (runtime.store as SqliteStore).database
        .prepare('SELECT max_attempts FROM machine_jobs')
        .all();
      expect(jobs).toEqual([{ max_attempts: 8 }]);
    } finally {
      await runtime.close();
    }
  });

  it('should report a bad value of process.env although env is given', async () => {
    vi.stubEnv('MACHINE_LOCK_TTL', 'soon');
    await expect(
      MachineRuntime.open({ worker: false, env: { MACHINE_DATABASE_URL: 'memory:' } }),
    ).rejects.toThrow('MACHINE_LOCK_TTL is "soon"');
  });
});
