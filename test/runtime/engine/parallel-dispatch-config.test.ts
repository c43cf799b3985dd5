import { describe, expect, it, vi } from 'vitest';
import {
  DEFAULT_PARALLEL_DISPATCH,
  loadParallelDispatchConfig,
} from '../../../src/runtime/engine/parallel-dispatch-config.js';
import { ENVIRONMENT_SETTINGS, type SettingKey } from '../../../src/runtime/environment.js';
import { InvalidSettingsException } from '../../../src/runtime/errors.js';
import { loadJobQueueConfig } from '../../../src/runtime/jobs/config.js';
import { loadRuntimeConfig } from '../../../src/runtime/engine/config.js';

describe('loadParallelDispatchConfig', () => {
  it('should use the spec defaults: off, no queue, 30/60/300/3/30, no watchdog', () => {
    expect(loadParallelDispatchConfig({}, {})).toEqual({
      enabled: false,
      queue: null,
      lockTimeout: 30,
      lockTtl: 60,
      jobTimeout: 300,
      jobTries: 3,
      jobBackoff: 30,
      regionTimeout: 0,
    });
    expect(loadParallelDispatchConfig({}, {})).toEqual(DEFAULT_PARALLEL_DISPATCH);
  });

  it('should check settings passed on at their defaults without building their schemas', () => {
    // The engine passes the resolved settings in again at every start: zod schemas cost it.
    const keys = Object.keys(ENVIRONMENT_SETTINGS).filter((key) =>
      key.startsWith('parallelDispatch'),
    ) as SettingKey[];
    const getters = keys.map((key) => vi.spyOn(ENVIRONMENT_SETTINGS[key], 'schema', 'get'));
    try {
      expect(loadParallelDispatchConfig(DEFAULT_PARALLEL_DISPATCH, {})).toEqual(
        DEFAULT_PARALLEL_DISPATCH,
      );
      expect(getters.map((getter) => getter.mock.calls.length)).toEqual(keys.map(() => 0));
      // A value other than the default is still checked.
      expect(() => loadParallelDispatchConfig({ jobTries: 0 }, {})).toThrow(
        InvalidSettingsException,
      );
    } finally {
      for (const getter of getters) getter.mockRestore();
    }
  });

  it('should read every MACHINE_PARALLEL_DISPATCH_ variable, and nothing else', () => {
    const env = {
      MACHINE_PARALLEL_DISPATCH_ENABLED: 'true',
      MACHINE_PARALLEL_DISPATCH_QUEUE: 'regions',
      MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT: '2.5',
      MACHINE_PARALLEL_DISPATCH_LOCK_TTL: '5',
      MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT: '10',
      MACHINE_PARALLEL_DISPATCH_JOB_TRIES: '4',
      MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF: '0',
      MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT: '1.5',
      MACHINE_JOB_TRIES: '9',
      MACHINE_LOCK_TTL: '9',
    };
    expect(loadParallelDispatchConfig({}, env)).toEqual({
      enabled: true,
      queue: 'regions',
      lockTimeout: 2.5,
      lockTtl: 5,
      jobTimeout: 10,
      jobTries: 4,
      jobBackoff: 0,
      regionTimeout: 1.5,
    });
    // Child and send jobs keep their own settings.
    expect(loadJobQueueConfig({}, env)).toMatchObject({ maxAttempts: 9, timeoutMs: 300_000 });
    expect(loadRuntimeConfig({}, env)).toMatchObject({ lockTtl: 9, lockTimeout: 30 });
  });

  it('should let options win over the environment', () => {
    expect(
      loadParallelDispatchConfig(
        { enabled: true, jobTries: 1, queue: null },
        {
          MACHINE_PARALLEL_DISPATCH_ENABLED: 'false',
          MACHINE_PARALLEL_DISPATCH_JOB_TRIES: '5',
          MACHINE_PARALLEL_DISPATCH_QUEUE: 'q',
        },
      ),
    ).toMatchObject({ enabled: true, jobTries: 1, queue: null });
  });

  it('should report every malformed value and unknown name at once', () => {
    let thrown: unknown;
    try {
      loadParallelDispatchConfig(
        { lockTimeout: -1 },
        {
          MACHINE_PARALLEL_DISPATCH_ENABLED: 'yes',
          MACHINE_PARALLEL_DISPATCH_JOB_TRIES: '1.5',
          MACHINE_PARALLEL_DISPATCH_LOCK_TTL: '0',
          MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT: 'soon',
          MACHINE_PARALLEL_DISPATCH_QUEUE: 'two words',
          MACHINE_PARALLEL_DISPATCH_JOB_TRIE: '3',
        },
      );
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidSettingsException);
    const messages = (thrown as InvalidSettingsException).details.problems.map(
      (problem) => problem.message,
    );
    expect(messages).toHaveLength(7);
    expect(messages[0]).toMatch(
      /^MACHINE_PARALLEL_DISPATCH_JOB_TRIE is not a setting; expected one of MACHINE_PARALLEL_DISPATCH_ENABLED, /,
    );
    expect(messages.slice(1)).toEqual([
      'MACHINE_PARALLEL_DISPATCH_ENABLED is "yes"; expected true, false, 1 or 0.',
      'MACHINE_PARALLEL_DISPATCH_QUEUE is "two words"; expected a queue name of letters, digits, _ . - (empty: none).',
      'MACHINE_PARALLEL_DISPATCH_LOCK_TTL is "0"; expected a number of seconds > 0.',
      'MACHINE_PARALLEL_DISPATCH_JOB_TRIES is "1.5"; expected an integer >= 1.',
      'MACHINE_PARALLEL_DISPATCH_REGION_TIMEOUT is "soon"; expected a number of seconds >= 0.',
      "option 'parallelDispatchLockTimeout' is -1; expected a number of seconds >= 0.",
    ]);
  });
});
