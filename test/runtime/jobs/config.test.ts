import { describe, expect, it } from 'vitest';
import { InvalidSettingsException } from '../../../src/runtime/errors.js';
import { DEFAULT_JOB_QUEUE_SETTINGS, loadJobQueueConfig } from '../../../src/runtime/jobs/index.js';

describe('loadJobQueueConfig', () => {
  it('should use the defaults of the spec without options or environment', () => {
    expect(loadJobQueueConfig({}, {})).toEqual({
      maxAttempts: 3,
      backoffMs: 30_000,
      timeoutMs: 300_000,
      concurrency: 4,
      pollIntervalMs: 1000,
    });
    expect(DEFAULT_JOB_QUEUE_SETTINGS.maxAttempts).toBe(3);
  });

  it.each([
    ['MACHINE_JOB_TRIES', '5', { maxAttempts: 5 }],
    ['MACHINE_JOB_BACKOFF', '1.5', { backoffMs: 1500 }],
    ['MACHINE_JOB_TIMEOUT', '60', { timeoutMs: 60_000 }],
    ['MACHINE_JOB_CONCURRENCY', '8', { concurrency: 8 }],
    ['MACHINE_JOB_POLL_INTERVAL', '0.05', { pollIntervalMs: 50 }],
  ])('should read %s=%s (seconds for times)', (name, value, expected) => {
    expect(loadJobQueueConfig({}, { [name]: value })).toMatchObject(expected);
  });

  it('should let options win over the environment', () => {
    expect(loadJobQueueConfig({ maxAttempts: 7 }, { MACHINE_JOB_TRIES: '5' }).maxAttempts).toBe(7);
  });

  it("should not read the parallel dispatch job settings: they are region jobs' own", () => {
    const env = {
      MACHINE_PARALLEL_DISPATCH_JOB_TRIES: '9',
      MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF: '1',
      MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT: '2',
    };
    expect(loadJobQueueConfig({}, env)).toEqual(DEFAULT_JOB_QUEUE_SETTINGS);
  });

  it('should report every bad value at once, naming where it came from', () => {
    const env = {
      MACHINE_JOB_TRIES: '0',
      MACHINE_JOB_BACKOFF: 'soon',
    };
    let thrown: unknown;
    try {
      loadJobQueueConfig({ concurrency: 0 }, env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidSettingsException);
    const { problems } = (thrown as InvalidSettingsException).details;
    expect((thrown as InvalidSettingsException).code).toBe('MR_INVALID_SETTINGS');
    expect(problems.map((problem) => problem.message)).toEqual([
      'MACHINE_JOB_TRIES is "0"; expected an integer >= 1.',
      'MACHINE_JOB_BACKOFF is "soon"; expected a number of seconds >= 0.',
      "option 'concurrency' is 0; expected an integer >= 1.",
    ]);
  });
});
