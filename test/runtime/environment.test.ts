/**
 * The one schema of the runtime's environment: every variable, every bad value reported at once
 * with its name, its value and what is accepted, under one stable code.
 */
import { describe, expect, it } from 'vitest';
import {
  ENVIRONMENT_SETTINGS,
  parseEnvironment,
  readEnvironment,
} from '../../src/runtime/environment.js';
import { InvalidSettingsException, InvalidStoreUrlException } from '../../src/runtime/errors.js';
import { loadJobQueueConfig } from '../../src/runtime/jobs/config.js';
import { loadRuntimeConfig } from '../../src/runtime/engine/config.js';
import { parseStoreUrl } from '../../src/runtime/store-url.js';

function thrownBy(run: () => unknown): InvalidSettingsException {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidSettingsException);
    return error as InvalidSettingsException;
  }
  throw new Error('expected an InvalidSettingsException');
}

describe('environment schema', () => {
  it('should give every default without variables', () => {
    const { values, problems, sources } = parseEnvironment({});
    expect(problems).toEqual([]);
    expect(values).toEqual({
      databaseUrl: 'sqlite:./data/machines.db',
      lockTtl: 60,
      lockTimeout: 30,
      maxTransitionDepth: 100,
      scenariosEnabled: false,
      traceBehaviors: false,
      traceSteps: false,
      timerTries: 3,
      timerBackoff: 1,
      shutdownTimeout: 10,
      historyRetentionDays: 0,
      historyRetentionArchive: false,
      jobTries: 3,
      jobBackoff: 30,
      jobTimeout: 300,
      jobConcurrency: 4,
      jobPollInterval: 1,
      parallelDispatchEnabled: false,
      parallelDispatchQueue: '',
      parallelDispatchLockTimeout: 30,
      parallelDispatchLockTtl: 60,
      parallelDispatchJobTimeout: 300,
      parallelDispatchJobTries: 3,
      parallelDispatchJobBackoff: 30,
      parallelDispatchRegionTimeout: 0,
      port: 3000,
      host: '127.0.0.1',
    });
    expect(new Set(Object.values(sources))).toEqual(new Set(['default']));
  });

  it('should name every variable of the MACHINE_ prefix it knows under one table', () => {
    const names = Object.values(ENVIRONMENT_SETTINGS).flatMap((spec) => spec.env);
    expect(names.filter((name) => !name.startsWith('MACHINE_'))).toEqual(['PORT', 'HOST']);
    expect(new Set(names).size).toBe(names.length);
  });

  it('should report every bad value at once: variable, value, what is accepted', () => {
    const error = thrownBy(() =>
      readEnvironment({
        MACHINE_DATABASE_URL: 'postgres://app:s3cret@db:5432/app?schema=x y',
        MACHINE_LOCK_TTL: 'soon',
        MACHINE_JOB_CONCURRENCY: '2.5',
        MACHINE_SCENARIOS_ENABLED: 'yes',
        MACHINE_JOB_POLL_INTERVAL: '0.5',
        PORT: '70000',
      }),
    );
    expect(error.code).toBe('MR_INVALID_SETTINGS');
    expect(error.details.problems.map((problem) => problem.source)).toEqual([
      'MACHINE_LOCK_TTL',
      'MACHINE_SCENARIOS_ENABLED',
      'MACHINE_JOB_CONCURRENCY',
      'PORT',
    ]);
    expect(error.message).toContain(
      'MACHINE_LOCK_TTL is "soon"; expected a number of seconds > 0.',
    );
    expect(error.message).toContain('MACHINE_JOB_CONCURRENCY is "2.5"; expected an integer >= 1.');
    expect(error.message).toContain('PORT is "70000"; expected an integer from 0 to 65535.');
  });

  it('should reject a bad store URL with a coded error, password hidden', () => {
    const error = thrownBy(() =>
      readEnvironment({ MACHINE_DATABASE_URL: 'mysql://app:s3cret@db/app' }),
    );
    expect(error.details.problems[0]).toMatchObject({
      source: 'MACHINE_DATABASE_URL',
      value: 'mysql://app:***@db/app',
    });
    expect(error.message).not.toContain('s3cret');
    expect(error.message).toContain("expected 'sqlite:<file>', 'sqlite::memory:', 'memory:' or");
    expect(() => parseStoreUrl('sqlite:')).toThrow(InvalidStoreUrlException);
    try {
      parseStoreUrl('redis://u:pw@h');
    } catch (thrown) {
      expect((thrown as InvalidStoreUrlException).code).toBe('MR_INVALID_STORE_URL');
      expect((thrown as Error).message).toBe(
        "Invalid store URL 'redis://u:***@h': expected 'sqlite:<file>', 'sqlite::memory:', " +
          "'memory:' or 'postgres://user@host:port/database'.",
      );
    }
  });

  it('should report the job variables when the runtime config is loaded first, and the reverse', () => {
    const env = { MACHINE_JOB_TRIES: '0', MACHINE_LOCK_TIMEOUT: '-1' };
    for (const load of [() => loadRuntimeConfig({}, env), () => loadJobQueueConfig({}, env)]) {
      expect(thrownBy(load).details.problems.map((problem) => problem.source)).toEqual([
        'MACHINE_LOCK_TIMEOUT',
        'MACHINE_JOB_TRIES',
      ]);
    }
  });

  it('should parse numbers strictly: no hex, no blanks inside, no Infinity', () => {
    for (const value of ['0x10', '1 0', 'Infinity', '1e400', '']) {
      const { problems } = parseEnvironment({ MACHINE_MAX_TRANSITION_DEPTH: value });
      expect(problems.length, value).toBe(value === '' ? 0 : 1);
    }
    expect(parseEnvironment({ MACHINE_LOCK_TTL: ' 2.5 ' }).values.lockTtl).toBe(2.5);
  });
});
